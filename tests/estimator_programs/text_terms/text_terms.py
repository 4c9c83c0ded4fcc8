"""A review-sentiment classifier over variable-length terms, as a TensorFlow 1.x Estimator program (TF 1.15).

Written for hookrun's tests after Google's Machine Learning Crash Course exercise "Intro to sparse data and
embeddings" (its TFRecord input pipeline: a variable-length ``terms`` feature, a float 0/1 label) and the
train/eval branch of the training-data-analyst ``txtcls1`` model (see SOURCE.md): terms looked up in a
vocabulary file, embedded, two hidden layers with default names, Adagrad built under ``mode != PREDICT``
(so also in eval mode), and a ``tf.summary.scalar`` of the model's own.
"""

import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys
from hookrun.runner.trained import serving

TERMS_SPEC = {
    "terms": tf.compat.v1.VarLenFeature(dtype=tf.string),
    "labels": tf.compat.v1.FixedLenFeature(shape=[1], dtype=tf.float32),
}


def parse_fn(serialized):
    """A batch of serialized examples -> ({"terms": SparseTensor of strings}, float32 [batch, 1] labels)."""
    parsed = tf.compat.v1.parse_example(serialized, TERMS_SPEC)
    labels = parsed.pop("labels")
    return parsed, labels


def input_fn(params, mode):
    """The training files (repeated ``params["epochs"]`` times) in train mode, the evaluation files otherwise."""
    if mode == ModeKeys.TRAIN:
        dataset = tf.data.TFRecordDataset(params["train_files"]).repeat(params["epochs"])
    else:
        dataset = tf.data.TFRecordDataset(params["eval_files"])
    return dataset.batch(params["batch_size"]).map(parse_fn)


def model_fn(features, labels, mode, params):
    """Embedded terms -> hidden layers -> one logit; sigmoid cross-entropy."""
    terms = tf.feature_column.categorical_column_with_vocabulary_file(
        key="terms", vocabulary_file=params["vocabulary_file"], num_oov_buckets=1
    )
    columns = [tf.feature_column.embedding_column(terms, dimension=params["embedding_dimension"])]
    net = tf.compat.v1.feature_column.input_layer(features, columns)
    for units in params["hidden_units"]:
        net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, 1)
    probabilities = tf.sigmoid(logits)
    predictions = {"probabilities": probabilities, "class_ids": tf.cast(probabilities > 0.5, tf.int64)}

    loss = train_op = metrics = None
    if mode != ModeKeys.PREDICT:
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
        tf.compat.v1.summary.scalar("mean_probability", tf.reduce_mean(probabilities))
        optimizer = tf.compat.v1.train.AdagradOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        metrics = {
            "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"]),
            "auc": tf.compat.v1.metrics.auc(labels, probabilities),
        }
    return EstimatorSpec(
        mode, predictions=predictions, loss=loss, train_op=train_op, eval_metric_ops=metrics
    )


def serving_input_receiver_fn():
    """Serialized ``tf.compat.v1.train.Example`` protos with a ``terms`` feature."""
    return serving.build_parsing_serving_input_receiver_fn({"terms": TERMS_SPEC["terms"]})()


def main(_):
    params = {
        "train_files": ["data/train.tfrecord"],
        "eval_files": ["data/eval.tfrecord"],
        "vocabulary_file": "terms.txt",
        "embedding_dimension": 4,
        "hidden_units": [10, 10],
        "learning_rate": 0.1,
        "batch_size": 16,
        "epochs": 2,
    }
    config = tf.estimator.RunConfig(model_dir="/tmp/text_terms", tf_random_seed=0, save_checkpoints_steps=8)
    estimator = tf.estimator.Estimator(model_fn, params=params, config=config)
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(input_fn),
        tf.estimator.EvalSpec(input_fn, steps=None, throttle_secs=0),
    )
    estimator.export_saved_model("/tmp/text_terms_export", serving_input_receiver_fn)


if __name__ == "__main__":
    tf.compat.v1.app.run(main)
