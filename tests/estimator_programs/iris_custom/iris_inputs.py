"""main()'s input functions and ``params``, named for hookrun's YAML.

main() passes lambdas (``lambda: iris_data.train_input_fn(train_x, train_y, args.batch_size)``) and puts
feature-column *objects* in ``params["feature_columns"]``; a YAML config can name neither. These functions
do what main() did, with module-level names: ``data.input_fn``, ``data.eval_input_fn`` and ``graph.builder``.
"""

import custom_estimator
import iris_data
import tensorflow as tf


def feature_columns():
    """main()'s ``my_feature_columns``: a numeric column per measure."""
    (train_x, _), _ = iris_data.load_data()
    return [tf.feature_column.numeric_column(key=key) for key in train_x.keys()]


def my_model(features, labels, mode, params):
    """``custom_estimator.my_model`` with main()'s ``params["feature_columns"]`` added (YAML cannot hold them)."""
    return custom_estimator.my_model(features, labels, mode, dict(params, feature_columns=feature_columns()))


def train_input_fn(params):
    """``iris_data.train_input_fn(train_x, train_y, batch_size)``, as main()'s lambda called it."""
    (train_x, train_y), _ = iris_data.load_data()
    return iris_data.train_input_fn(train_x, train_y, params["batch_size"])


def eval_input_fn(params):
    """The test set's batches as a Dataset: ``iris_data.eval_input_fn``'s pipeline before its ``get_next()``.

    hookrun refuses an eval_input_fn that returns tensors (it re-reads the dataset at every evaluation),
    where Estimator, which rebuilt the graph for each evaluation, accepted them.
    """
    _, (test_x, test_y) = iris_data.load_data()
    return tf.data.Dataset.from_tensor_slices((dict(test_x), test_y)).batch(params["batch_size"])


def predict_input_fn(params):
    """main()'s ``predict_x`` (three flowers, features only), as the Dataset ``iris_data.eval_input_fn`` makes."""
    predict_x = {
        "SepalLength": [5.1, 5.9, 6.9],
        "SepalWidth": [3.3, 3.0, 3.1],
        "PetalLength": [1.7, 4.2, 5.4],
        "PetalWidth": [0.5, 1.5, 2.1],
    }
    return tf.data.Dataset.from_tensor_slices(predict_x).batch(params["batch_size"])
