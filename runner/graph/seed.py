"""One seed for a run: Python's ``random``, NumPy's global generator and TensorFlow's graph-level seed."""

from __future__ import annotations

import random
from typing import Any

import numpy as np


def seed_everything(tf: Any, seed: int | None) -> None:
    """Seed every generator a ``model_fn``'s initial weights may come from; mirrors ``keras.utils.set_random_seed``.

    Call it inside the new graph's ``as_default()`` block, before the builder runs. ``tf.compat.v1.set_random_seed``
    alone does not make a run repeat: tf-keras's initializers (``tf.compat.v1.layers.dense``, ``tf.keras.layers``
    under ``TF_USE_LEGACY_KERAS=1``) draw their op-level seeds from Python's ``random`` when the user gives none,
    and user code may use NumPy's global generator. ``tf.estimator``'s ``RunConfig(tf_random_seed=)`` set the
    graph-level seed only; Keras's ``set_random_seed`` seeds all three, as here.

    Args:
        tf: the ``tensorflow`` module.
        seed: ``data.seed``; None leaves every generator as it is (a run that does not repeat).
    """
    if seed is None:
        return
    random.seed(seed)
    np.random.seed(seed % 2**32)  # NumPy's legacy seed takes 0 <= seed < 2**32
    tf.compat.v1.set_random_seed(seed)
