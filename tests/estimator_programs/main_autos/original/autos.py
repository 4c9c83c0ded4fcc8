"""Car prices as the TensorFlow 1.x regression examples' ``imports85`` module gave them (TF 1.15).

Written for hookrun's tests after tensorflow/tensorflow ``tensorflow/examples/get_started/regression/imports85.py``
(see SOURCE.md): ``dataset()`` returns the training and test sets as ``tf.data.Dataset``s of
``(features, price)`` with the columns the regression examples read. The upstream module downloads the UCI
automobile file; this one makes 80 deterministic rows (60 train, 20 test).
"""

import numpy as np
import tensorflow as tf

BODY_STYLES = ["hardtop", "wagon", "sedan", "hatchback", "convertible"]
MAKES = ["audi", "bmw", "honda", "mazda", "toyota", "volvo"]


def raw_rows(seed=0, rows=80):
    """The columns as NumPy arrays and the price (float32 dollars)."""
    rng = np.random.RandomState(seed)
    weight = rng.uniform(1500, 4000, rows).astype(np.float32)
    mpg = rng.uniform(16, 50, rows).astype(np.float32)
    style = np.array(BODY_STYLES)[rng.randint(0, len(BODY_STYLES), rows)]
    make = np.array(MAKES)[rng.randint(0, len(MAKES), rows)]
    price = (4 * weight - 150 * mpg + 3000 * (make == "bmw") + 2000 * (style == "convertible")
             + rng.normal(0, 500, rows)).astype(np.float32)
    features = {"curb-weight": weight, "highway-mpg": mpg, "body-style": style, "make": make}
    return features, price


def dataset(train_fraction=0.75):
    """``(train, test)``: datasets of ``({column: value}, price)`` rows."""
    features, price = raw_rows()
    cut = int(len(price) * train_fraction)
    train = tf.data.Dataset.from_tensor_slices(({k: v[:cut] for k, v in features.items()}, price[:cut]))
    test = tf.data.Dataset.from_tensor_slices(({k: v[cut:] for k, v in features.items()}, price[cut:]))
    return train, test
