"""A custom Estimator for the iris data, as the TensorFlow 1.x "get started" samples had it (TF 1.15).

Written for hookrun's tests after tensorflow/models ``samples/core/get_started/custom_estimator.py`` (see
SOURCE.md): ``input_layer`` over the feature columns main() puts in ``params``, two default-named hidden
layers, a ``tf.summary.scalar`` of the accuracy, Adagrad; main() trains, evaluates and predicts.
"""

import argparse

import iris_data
import tensorflow.compat.v1 as tf

from hookrun import estimator as tf_estimator

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", default=100, type=int, help="batch size")
parser.add_argument("--train_steps", default=1000, type=int, help="number of training steps")


def my_model(features, labels, mode, params):
    """A DNN over ``params["feature_columns"]`` with ``params["hidden_units"]``, ``params["n_classes"]`` classes."""
    net = tf.feature_column.input_layer(features, params["feature_columns"])
    for units in params["hidden_units"]:
        net = tf.layers.dense(net, units=units, activation=tf.nn.relu)
    logits = tf.layers.dense(net, params["n_classes"], activation=None)

    predicted_classes = tf.argmax(logits, 1)
    if mode == tf_estimator.ModeKeys.PREDICT:
        predictions = {
            "class_ids": predicted_classes[:, tf.newaxis],
            "probabilities": tf.nn.softmax(logits),
            "logits": logits,
        }
        return tf_estimator.EstimatorSpec(mode, predictions=predictions)

    onehot_labels = tf.one_hot(labels, 3, 1, 0)
    loss = tf.losses.softmax_cross_entropy(onehot_labels=onehot_labels, logits=logits)

    accuracy = tf.metrics.accuracy(labels=labels, predictions=predicted_classes, name="acc_op")
    metrics = {"accuracy": accuracy}
    tf.summary.scalar("accuracy", accuracy[1])

    if mode == tf_estimator.ModeKeys.EVAL:
        return tf_estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)

    assert mode == tf_estimator.ModeKeys.TRAIN
    optimizer = tf.train.AdagradOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf_estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(argv):
    args = parser.parse_args(argv[1:])
    (train_x, train_y), (test_x, test_y) = iris_data.load_data()

    my_feature_columns = []
    for key in train_x.keys():
        my_feature_columns.append(tf.feature_column.numeric_column(key=key))

    classifier = tf_estimator.Estimator(
        model_fn=my_model,
        params={"feature_columns": my_feature_columns, "hidden_units": [10, 10], "n_classes": 3},
    )
    classifier.train(input_fn=lambda: iris_data.train_input_fn(train_x, train_y, args.batch_size),
                     steps=args.train_steps)
    eval_result = classifier.evaluate(input_fn=lambda: iris_data.eval_input_fn(test_x, test_y, args.batch_size))
    print("\nTest set accuracy: {accuracy:0.3f}\n".format(**eval_result))

    predict_x = {
        "SepalLength": [5.1, 5.9, 6.9],
        "SepalWidth": [3.3, 3.0, 3.1],
        "PetalLength": [1.7, 4.2, 5.4],
        "PetalWidth": [0.5, 1.5, 2.1],
    }
    predictions = classifier.predict(input_fn=lambda: iris_data.eval_input_fn(predict_x, None, args.batch_size))
    for pred_dict, expected in zip(predictions, iris_data.SPECIES, strict=False):
        class_id = pred_dict["class_ids"][0]
        probability = pred_dict["probabilities"][class_id]
        print(f'Prediction is "{iris_data.SPECIES[class_id]}" ({100 * probability:.1f}%), expected "{expected}"')


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run(main)
