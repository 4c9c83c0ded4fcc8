"""A custom hook for the start-up benchmark: writes the wall time of the first step's start and end.

``bench.py`` copies this file beside a generated config and lists it first in ``hooks:``; the launch time
of ``hookrun train`` subtracted from these times is the time to the first training step.
"""

from __future__ import annotations

import json
import time
from typing import Any

import tensorflow as tf


class FirstStepProbe(tf.compat.v1.train.SessionRunHook):
    """Record ``time.time()`` at the first ``before_run`` and the first ``after_run``, then do nothing.

    Args:
        path: JSON file written after the first step: ``{"first_step_start": t0, "first_step_end": t1}``.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.started: float | None = None
        self.done = False

    def before_run(self, run_context: Any) -> None:
        """Note the first step's start."""
        if self.started is None:
            self.started = time.time()

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """After the first step: write both times."""
        if not self.done:
            self.done = True
            with open(self.path, "w", encoding="utf-8") as handle:
                json.dump({"first_step_start": self.started, "first_step_end": time.time()}, handle)
