"""Regression with a custom Estimator, as TensorFlow 1.x's get_started regression example (TF 1.15).

Written for hookrun's tests after tensorflow/tensorflow
``tensorflow/examples/get_started/regression/custom_regression.py`` (see SOURCE.md): a DNN over feature columns
(numbers, a vocabulary list as an indicator, a hashed make as an embedding) with the optimizer class passed in
``params``; main() trains for ``STEPS``, evaluates and prints the test set's RMS error in dollars.
"""

import autos
import tensorflow as tf

STEPS = 200
PRICE_NORM_FACTOR = 1000


def dnn_regression_fn(features, labels, mode, params):
    """Hidden layers over ``params["feature_columns"]``; one price per row."""
    net = tf.feature_column.input_layer(features, params["feature_columns"])
    for units in params.get("hidden_units", [20]):
        net = tf.layers.dense(inputs=net, units=units, activation=tf.nn.relu)
    output = tf.layers.dense(inputs=net, units=1)
    predictions = tf.squeeze(output, 1)

    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions={"price": predictions})

    average_loss = tf.losses.mean_squared_error(labels, predictions)
    # reported as a sum over the batch, as the premade estimators did
    total_loss = tf.to_float(tf.shape(labels)[0]) * average_loss

    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = params.get("optimizer", tf.train.AdamOptimizer)(params.get("learning_rate", None))
        train_op = optimizer.minimize(loss=average_loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode=mode, loss=total_loss, train_op=train_op)

    assert mode == tf.estimator.ModeKeys.EVAL
    rmse = tf.metrics.root_mean_squared_error(labels, predictions)
    return tf.estimator.EstimatorSpec(mode=mode, loss=total_loss, eval_metric_ops={"rmse": rmse})


def normalize_price(features, labels):
    """Prices in thousands, for better convergence."""
    return features, labels / PRICE_NORM_FACTOR


def input_train():
    """Shuffled, endless batches of the training rows."""
    return autos.dataset()[0].map(normalize_price).shuffle(1000).batch(16).repeat()


def input_test():
    """One pass over the test rows."""
    return autos.dataset()[1].map(normalize_price).shuffle(1000).batch(16)


def feature_columns():
    """Two numbers, the body style one-hot, the make as a 3-dimensional embedding of 50 hash buckets."""
    body_style = tf.feature_column.categorical_column_with_vocabulary_list(
        key="body-style", vocabulary_list=autos.BODY_STYLES)
    make = tf.feature_column.categorical_column_with_hash_bucket(key="make", hash_bucket_size=50)
    return [
        tf.feature_column.numeric_column(key="curb-weight", normalizer_fn=lambda x: x / 1000),
        tf.feature_column.numeric_column(key="highway-mpg", normalizer_fn=lambda x: x / 10),
        tf.feature_column.indicator_column(body_style),
        tf.feature_column.embedding_column(make, dimension=3),
    ]


def main(argv):
    """Build, train and evaluate the model."""
    assert len(argv) == 1
    model = tf.estimator.Estimator(
        model_fn=dnn_regression_fn,
        params={
            "feature_columns": feature_columns(),
            "learning_rate": 0.01,
            "optimizer": tf.train.AdamOptimizer,
            "hidden_units": [20, 20],
        },
        config=tf.estimator.RunConfig(tf_random_seed=1),
    )
    model.train(input_fn=input_train, steps=STEPS)
    eval_result = model.evaluate(input_fn=input_test)
    print("\n" + 80 * "*")
    print("\nRMS error for the test set: ${:.0f}".format(PRICE_NORM_FACTOR * eval_result["rmse"]))
    print()


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run(main=main)
