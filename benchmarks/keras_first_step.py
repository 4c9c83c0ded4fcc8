"""The Keras side of the start-up benchmark: a plain Keras 3 training script on the linear workload.

``python benchmarks/keras_first_step.py PROBE.json LOGDIR`` reads ``configs/data/mtcars.csv`` (mpg on cyl,
disp, wt, standardized), builds ``Dense(1)`` with SGD, and fits 100 batches of 8 with the benchmark's
callbacks (TerminateOnNaN, TensorBoard(update_freq=100), ModelCheckpoint(save_freq=1000, weights only)).
A callback writes ``time.time()`` at the first ``on_train_batch_begin`` and ``on_train_batch_end`` to
PROBE.json; ``bench.py`` subtracts the launch time.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

DATA = Path(__file__).resolve().parent.parent / "configs" / "data" / "mtcars.csv"


class FirstBatchProbe(keras.callbacks.Callback):
    """Write the wall time of the first batch's start and end to a JSON file."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.started: float | None = None
        self.done = False

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        """Note the first batch's start."""
        if self.started is None:
            self.started = time.time()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        """After the first batch: write both times."""
        if not self.done:
            self.done = True
            with open(self.path, "w", encoding="utf-8") as handle:
                json.dump({"first_step_start": self.started, "first_step_end": time.time()}, handle)


class CoreSummary:
    """``tf.summary`` with ``scalar`` from TF core, for the TensorBoard callback when ``tensorboard`` is missing."""

    def __getattr__(self, name: str) -> Any:
        return getattr(tf.summary, name)

    def scalar(self, name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
        """Write one scalar with ``tf.summary.write``."""
        return tf.summary.write(name, tf.cast(data, tf.float32), step=step)


def main(probe: str, logdir: str) -> int:
    """Load the data, build and fit the model; the probe records the first batch."""
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    x = np.array([[float(r["cyl"]), float(r["disp"]), float(r["wt"])] for r in rows], dtype=np.float32)
    y = np.array([[float(r["mpg"])] for r in rows], dtype=np.float32)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).repeat().batch(8).prefetch(2)

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    tensorboard = keras.callbacks.TensorBoard(log_dir=logdir, update_freq=100)
    if importlib.util.find_spec("tensorboard") is None:
        tensorboard._summary_module = CoreSummary()
    callbacks = [
        keras.callbacks.TerminateOnNaN(),
        tensorboard,
        keras.callbacks.ModelCheckpoint(
            os.path.join(logdir, "model.weights.h5"), save_weights_only=True, save_freq=1000
        ),
        FirstBatchProbe(probe),
    ]
    model.fit(dataset, epochs=1, steps_per_epoch=100, verbose=0, callbacks=callbacks)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
