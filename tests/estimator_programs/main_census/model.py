"""The census income model of Cloud ML Engine's custom-estimator sample, in TensorFlow 1.x (TF 1.15).

Written for hookrun's tests after GoogleCloudPlatform/cloudml-samples ``census/customestimator/trainer/model.py``
(see SOURCE.md): CSV columns parsed in the graph, feature columns (numbers, a vocabulary list one-hot, a hashed
embedding), ``generate_model_fn`` returning the model_fn as a closure over its hyperparameters, ``export_outputs``
for serving and a JSON-style serving input function.
"""

import tensorflow.compat.v1 as tf

from hookrun import estimator as tf_estimator

CSV_COLUMNS = ["age", "workclass", "education", "hours_per_week", "income_bracket"]
CSV_COLUMN_DEFAULTS = [[0], [""], [""], [0], [""]]
LABEL_COLUMN = "income_bracket"
LABELS = ["<=50K", ">50K"]
WORKCLASSES = ["Private", "Self-emp", "Federal-gov", "Local-gov"]
INPUT_COLUMNS = [
    tf.feature_column.numeric_column("age"),
    tf.feature_column.numeric_column("hours_per_week"),
    tf.feature_column.categorical_column_with_vocabulary_list("workclass", WORKCLASSES),
    tf.feature_column.categorical_column_with_hash_bucket("education", hash_bucket_size=20),
]
UNUSED_COLUMNS = set(CSV_COLUMNS) - {col.name for col in INPUT_COLUMNS} - {LABEL_COLUMN}


def generate_model_fn(embedding_size=8, hidden_units=None, learning_rate=0.1):
    """The model_fn, closed over its hyperparameters."""
    age, hours, workclass, education = INPUT_COLUMNS

    def _model_fn(mode, features, labels):
        columns = [
            tf.feature_column.numeric_column("age", normalizer_fn=lambda x: (tf.to_float(x) - 40) / 12),
            tf.feature_column.numeric_column("hours_per_week", normalizer_fn=lambda x: (tf.to_float(x) - 40) / 12),
            tf.feature_column.indicator_column(workclass),
            tf.feature_column.embedding_column(education, dimension=embedding_size),
        ]
        net = tf.feature_column.input_layer(features, columns)
        for units in hidden_units:
            net = tf.layers.dense(net, units, activation=tf.nn.relu)
        logits = tf.layers.dense(net, len(LABELS))

        if mode in (tf_estimator.ModeKeys.PREDICT, tf_estimator.ModeKeys.EVAL):
            probabilities = tf.nn.softmax(logits)
            predicted_indices = tf.argmax(probabilities, 1)

        if mode in (tf_estimator.ModeKeys.TRAIN, tf_estimator.ModeKeys.EVAL):
            label_indices = tf.cast(tf.equal(labels, LABELS[1]), tf.int64)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=label_indices))

        if mode == tf_estimator.ModeKeys.PREDICT:
            predictions = {
                "classes": tf.gather(LABELS, predicted_indices),
                "probabilities": probabilities,
            }
            export_outputs = {"prediction": tf_estimator.export.PredictOutput(predictions)}
            return tf_estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)

        if mode == tf_estimator.ModeKeys.TRAIN:
            global_step = tf.train.get_or_create_global_step()
            train_op = tf.train.AdagradOptimizer(learning_rate).minimize(loss, global_step=global_step)
            return tf_estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

        if mode == tf_estimator.ModeKeys.EVAL:
            eval_metric_ops = {
                "accuracy": tf.metrics.accuracy(label_indices, predicted_indices),
                "auc": tf.metrics.auc(label_indices, probabilities[:, 1]),
            }
            return tf_estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=eval_metric_ops)

    def model_fn(features, labels, mode):
        return _model_fn(mode, features, labels)

    return model_fn


def json_serving_input_fn():
    """One placeholder per input column, as a JSON request gives them."""
    inputs = {}
    for feat in INPUT_COLUMNS:
        dtype = tf.string if feat.name in ("workclass", "education") else tf.int32
        inputs[feat.name] = tf.placeholder(shape=[None], dtype=dtype)
    return tf_estimator.export.ServingInputReceiver(inputs, inputs)


SERVING_FUNCTIONS = {"JSON": json_serving_input_fn}


def parse_csv(rows_string_tensor):
    """CSV lines -> a dict column -> tensor (the unused columns dropped)."""
    row_columns = tf.expand_dims(rows_string_tensor, -1)
    columns = tf.decode_csv(row_columns, record_defaults=CSV_COLUMN_DEFAULTS)
    features = dict(zip(CSV_COLUMNS, columns, strict=True))
    for col in UNUSED_COLUMNS:
        features.pop(col)
    return features


def input_fn(filenames, num_epochs=None, shuffle=True, skip_header_lines=0, batch_size=200):
    """Batches of ``(features, label)`` parsed from CSV files."""
    dataset = tf.data.TextLineDataset(filenames).skip(skip_header_lines).map(parse_csv)
    if shuffle:
        dataset = dataset.shuffle(buffer_size=batch_size * 10)
    dataset = dataset.repeat(num_epochs).batch(batch_size)
    iterator = dataset.make_one_shot_iterator()
    features = iterator.get_next()
    features = {key: tf.squeeze(value, -1) for key, value in features.items()}
    return features, features.pop(LABEL_COLUMN)
