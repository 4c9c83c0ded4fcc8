"""A convolutional digit classifier as a TensorFlow 1.x Estimator program (TF 1.15).

Written for hookrun's tests after the TF 1.x layers tutorial's ``cnn_mnist.py`` (see SOURCE.md): the same
model_fn (two 5x5 convolutions with max pooling, a 1024-unit dense layer, dropout 0.4 in training,
default layer names, plain gradient descent), fed from NumPy arrays through ``numpy_input_fn``.
"""

import numpy as np
import tensorflow as tf
from digits import load_digits

tf.logging.set_verbosity(tf.logging.INFO)


def cnn_model_fn(features, labels, mode):
    """The CNN: ``features["x"]`` float32 [batch, 784], ``labels`` int32 [batch] class ids."""
    images = tf.reshape(features["x"], [-1, 28, 28, 1])
    conv1 = tf.layers.conv2d(
        inputs=images, filters=32, kernel_size=[5, 5], padding="same", activation=tf.nn.relu
    )
    pool1 = tf.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
    conv2 = tf.layers.conv2d(
        inputs=pool1, filters=64, kernel_size=[5, 5], padding="same", activation=tf.nn.relu
    )
    pool2 = tf.layers.max_pooling2d(inputs=conv2, pool_size=[2, 2], strides=2)
    flat = tf.reshape(pool2, [-1, 7 * 7 * 64])
    dense = tf.layers.dense(inputs=flat, units=1024, activation=tf.nn.relu)
    dropout = tf.layers.dropout(inputs=dense, rate=0.4, training=mode == tf.estimator.ModeKeys.TRAIN)
    logits = tf.layers.dense(inputs=dropout, units=10)

    predictions = {
        "classes": tf.argmax(input=logits, axis=1),
        "probabilities": tf.nn.softmax(logits, name="softmax_tensor"),
    }
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions)

    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.001)
        train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

    eval_metric_ops = {"accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])}
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)


def main(unused_argv):
    train_data, train_labels = load_digits("train")
    train_labels = np.asarray(train_labels, dtype=np.int32)
    eval_data, eval_labels = load_digits("eval")
    eval_labels = np.asarray(eval_labels, dtype=np.int32)

    classifier = tf.estimator.Estimator(model_fn=cnn_model_fn, model_dir="/tmp/digits_convnet_model")
    logging_hook = tf.train.LoggingTensorHook(tensors={"probabilities": "softmax_tensor"}, every_n_iter=50)

    train_input_fn = tf.estimator.inputs.numpy_input_fn(
        x={"x": train_data}, y=train_labels, batch_size=32, num_epochs=None, shuffle=True
    )
    classifier.train(input_fn=train_input_fn, steps=20000, hooks=[logging_hook])

    eval_input_fn = tf.estimator.inputs.numpy_input_fn(x={"x": eval_data}, y=eval_labels, num_epochs=1, shuffle=False)
    print(classifier.evaluate(input_fn=eval_input_fn))

    def serving_input_receiver_fn():
        images = tf.placeholder(tf.float32, [None, 784], name="x")
        return tf.estimator.export.ServingInputReceiver({"x": images}, {"x": images})

    classifier.export_saved_model("/tmp/digits_convnet_export", serving_input_receiver_fn)


if __name__ == "__main__":
    tf.app.run()
