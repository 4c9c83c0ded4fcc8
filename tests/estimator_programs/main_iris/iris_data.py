"""The iris data and its input functions, as the TensorFlow 1.x "get started" samples had them (TF 1.15).

Written for hookrun's tests after tensorflow/models ``samples/core/get_started/iris_data.py`` (see SOURCE.md).
The sample downloads ``iris_training.csv``/``iris_test.csv`` and reads them with pandas; this one reads the
small CSVs beside it with the ``csv`` module (hookrun's test environment has no pandas), into the same
column -> values dict. ``csv_input_fn`` is the sample's ``tf.data`` CSV parser.
"""

import csv
import os

import tensorflow.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))
CSV_COLUMN_NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth", "Species"]
CSV_TYPES = [[0.0], [0.0], [0.0], [0.0], [0]]
SPECIES = ["Setosa", "Versicolor", "Virginica"]


def _read(name, y_name):
    with open(os.path.join(HERE, name), newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    columns = {key: [float(row[i]) for row in rows] for i, key in enumerate(CSV_COLUMN_NAMES)}
    labels = [int(value) for value in columns.pop(y_name)]
    return columns, labels


def load_data(y_name="Species"):
    """``(train_x, train_y), (test_x, test_y)``: dicts of the four measures and lists of class ids."""
    return _read("iris_training.csv", y_name), _read("iris_test.csv", y_name)


def train_input_fn(features, labels, batch_size):
    """Shuffled, repeated batches of ``(dict(features), labels)``, as the read end of the pipeline."""
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    dataset = dataset.shuffle(1000).repeat().batch(batch_size)
    return dataset.make_one_shot_iterator().get_next()


def eval_input_fn(features, labels, batch_size):
    """One pass over ``(dict(features), labels)`` (or the features alone when ``labels`` is None)."""
    features = dict(features)
    inputs = features if labels is None else (features, labels)
    dataset = tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)
    return dataset.make_one_shot_iterator().get_next()


def _parse_line(line):
    fields = tf.decode_csv(line, record_defaults=CSV_TYPES)
    features = dict(zip(CSV_COLUMN_NAMES, fields, strict=True))
    label = features.pop("Species")
    return features, label


def csv_input_fn(csv_path, batch_size):
    """The CSV file's rows parsed in the graph: shuffled, repeated batches of ``(features, label)``."""
    dataset = tf.data.TextLineDataset(csv_path).skip(1)
    dataset = dataset.map(_parse_line)
    dataset = dataset.shuffle(1000).repeat().batch(batch_size)
    return dataset.make_one_shot_iterator().get_next()
