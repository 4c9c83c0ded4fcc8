"""``inputs.numpy_input_fn`` and ``inputs.pandas_input_fn``: mirror ``tf.compat.v1.estimator.inputs`` (TF 1.15).

TensorFlow 1.15 fed the arrays through queues (``feeding_functions``); these give the same batches through
``tf.data`` (elements in the same order without ``shuffle``; a last, smaller batch when ``num_epochs`` is
set, as the queues' ``dequeue_up_to``). The input_fn returns a ``tf.data.Dataset`` of ``(features, labels)``
(features alone without ``y``). Importing this module does not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Callable[[], Any]:
    """An input_fn over numpy arrays; mirrors ``tf.compat.v1.estimator.inputs.numpy_input_fn``.

    Args:
        x: a numpy array ``[rows, ...]`` or a dict name -> array ``[rows, ...]``.
        y: labels: an array ``[rows, ...]``, a dict of them, or None.
        batch_size: rows per batch.
        num_epochs: passes over the data; None repeats forever.
        shuffle: shuffle the rows (required, as in TensorFlow 1.15); the shuffle buffer is ``queue_capacity``.
        queue_capacity: the shuffle buffer (rows).
        num_threads: accepted (tf.data decides its parallelism).

    Returns:
        ``input_fn()`` returning a ``tf.data.Dataset``.

    Raises:
        ValueError: ``shuffle`` not a bool; arrays of different lengths; ``x`` a dict sharing a key with ``y``.
        TypeError: ``x`` is neither an array nor a dict.
    """
    import numpy as np

    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided and explicitly set as boolean (it is recommended to set it as "
                         f"True for training); got {shuffle}")
    if isinstance(x, dict):
        features: Any = {key: np.asarray(value) for key, value in x.items()}
        lengths = {key: len(value) for key, value in features.items()}
    elif hasattr(x, "__len__"):
        features = np.asarray(x)
        lengths = {"x": len(features)}
    else:
        raise TypeError(f"x must be a dict or array; got {type(x).__name__}")
    labels: Any = None
    if y is not None:
        if isinstance(y, dict):
            if isinstance(x, dict) and set(x) & set(y):
                raise ValueError(f"{sorted(set(x) & set(y))} duplicate keys are found in both x and y")
            labels = {key: np.asarray(value) for key, value in y.items()}
            lengths.update({f"y[{key}]": len(value) for key, value in labels.items()})
        else:
            labels = np.asarray(y)
            lengths["y"] = len(labels)
    if len(set(lengths.values())) > 1:
        raise ValueError(f"Length of tensors in x and y is mismatched: {lengths}")
    rows = next(iter(lengths.values()))

    def input_fn() -> Any:
        import tensorflow as tf

        elements = features if labels is None else (features, labels)
        dataset = tf.data.Dataset.from_tensor_slices(elements)
        if shuffle:
            dataset = dataset.shuffle(min(queue_capacity, max(rows, 1)), reshuffle_each_iteration=True)
        return dataset.repeat(num_epochs).batch(batch_size)

    return input_fn


def pandas_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
    target_column: str = "target",
) -> Callable[[], Any]:
    """An input_fn over a pandas DataFrame; mirrors ``tf.compat.v1.estimator.inputs.pandas_input_fn``.

    Args:
        x: a ``pandas.DataFrame``: one feature per column.
        y: a ``pandas.Series`` (or a one-column DataFrame) of labels with ``x``'s index, or None.
        batch_size: rows per batch.
        num_epochs: passes over the data; None repeats forever.
        shuffle: shuffle the rows (required).
        queue_capacity: the shuffle buffer (rows).
        num_threads: accepted (tf.data decides its parallelism).
        target_column: the name ``y`` must not share with a column of ``x``.

    Returns:
        ``input_fn()`` returning a ``tf.data.Dataset`` of ``({column: values}, labels)``.

    Raises:
        ValueError: ``target_column`` is a column of ``x``; ``x`` and ``y``'s indexes differ; ``shuffle``
            not a bool.
    """
    if y is not None:
        if target_column in x:
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame already has a column "
                             f"with that name: {list(x.columns)}")
        if not (x.index == y.index).all():
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\nIndex for y: {y.index}\n")
        y = y.values if not hasattr(y, "columns") else {str(c): y[c].values for c in y.columns}
    return numpy_input_fn({str(column): x[column].values for column in x.columns}, y, batch_size, num_epochs,
                          shuffle, queue_capacity, num_threads)


__all__ = ["numpy_input_fn", "pandas_input_fn"]
