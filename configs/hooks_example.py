"""Example custom hooks for configs/mtcars_custom_hooks.yaml: a class hook and function hooks."""

from __future__ import annotations

import tensorflow as tf


class LossThresholdHook(tf.compat.v1.train.SessionRunHook):
    """Request a stop once the loss falls below ``threshold``.

    Fires: ``begin`` finds the ``loss`` tensor; ``before_run`` asks for it on
    every step; ``after_run`` requests a stop when it is below the threshold
    (every hook's ``after_run`` for that step still runs, then ``end``).

    Args:
        threshold: loss value (the loss's units) below which training stops.
    """

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.stopped_at: float | None = None

    def begin(self) -> None:
        self._loss = tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values) -> None:
        if run_values.results < self.threshold:
            self.stopped_at = float(run_values.results)
            print(f"loss {run_values.results:.3f} < {self.threshold}: requesting stop")
            run_context.request_stop()


def ask_for_loss(run_context):
    """``before_run`` as a function: ask for the loss and the global step."""
    graph = run_context.session.graph
    return tf.compat.v1.train.SessionRunArgs(
        {"loss": graph.get_tensor_by_name("loss:0"), "step": tf.compat.v1.train.get_global_step(graph)}
    )


def print_loss(run_context, run_values) -> None:
    """``after_run`` as a function: print the loss every 25 global steps."""
    if run_values.results["step"] % 25 == 0:
        print(f"step {run_values.results['step']}: loss {run_values.results['loss']:.3f}")
