"""Config of the ``early_stopping`` hook."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from hookrun.common.suggest import did_you_mean
from hookrun.config_schemas.bounds import Count
from hookrun.config_schemas.builders import builtin_eval_metrics
from hookrun.config_schemas.hook_base import HookConfig, HookList, ListIssue
from hookrun.config_schemas.run_files import HookPath


class EarlyStoppingConfig(HookConfig):
    """Stop when a validation value stops improving; mirrors ``tf.estimator.experimental.stop_if_no_decrease_hook``."""

    summary: ClassVar[str] = (
        "Stop training when a validation value (from the evaluation hook before it) has not improved for "
        "`patience` evaluations; optionally keep the best checkpoint."
    )
    mirrors: ClassVar[str] = "tf.estimator.experimental.stop_if_no_decrease_hook"
    catalogue_rank: ClassVar[int] = 110
    chief_only_default: ClassVar[bool] = True

    type: Literal["early_stopping"] = Field(description="Hook type.")
    monitor: str = Field(default="val_loss", description="The evaluation value watched: `val_loss` or `val_<metric>`.")
    mode: Literal["min", "max"] = Field(
        default="min", description="`min`: lower is better (losses, errors); `max`: higher is better (accuracy)."
    )
    patience: Count = Field(
        default=5, description="Stop after this many evaluations in a row without improvement (evaluations)."
    )
    min_delta: float = Field(
        default=0.0, ge=0.0, description="Smallest change that counts as an improvement (the monitor's units)."
    )
    keep_best: bool = Field(
        default=False,
        description="Save a checkpoint of the best weights under `<run_dir>/best/` at each new best "
        "(with best.json: step, monitor, value).",
    )

    def run_paths(self) -> list[HookPath]:
        """With ``keep_best``, ``best/`` (its checkpoints and ``best.json``), written by this hook only."""
        return [HookPath("keep_best", "best", "dir", label="best/ (keep_best: true)")] if self.keep_best else []

    def unknown_monitor(self, names: Sequence[str], evaluated_for: str = "") -> str | None:
        """Why ``monitor`` is not one of the evaluation's values, or None when it is.

        The one check of ``monitor``, made by ``preflight`` (from the built-in builder's metrics, before
        TensorFlow loads) and by the hook's ``build`` (from the graph's evaluation).

        Args:
            names: the evaluation's values (``val_loss``, ``val_<metric>``).
            evaluated_for: the builder, named in the message when given.

        Returns:
            ``"'val_acc' is not evaluated ...; the evaluation gives: ...; did you mean ...?"``, or None.
        """
        if self.monitor in names:
            return None
        where = f" for {evaluated_for}" if evaluated_for else ""
        return (
            f"{self.monitor!r} is not evaluated{where}; the evaluation gives: {', '.join(names)}"
            + did_you_mean(self.monitor, names)
        )

    def list_issues(self, index: int, run: HookList) -> list[ListIssue]:
        """An evaluation hook must come before; with a built-in builder, ``monitor`` must be one it gives."""
        if not any(h.needs_evaluation() for h in run.hooks[:index]):
            return [
                (
                    ("hooks", index),
                    "early_stopping reads the results of an `evaluation` hook: add `- type: evaluation` (with "
                    "`every_n_steps`) before it in `hooks:`",
                    "error",
                )
            ]
        metrics = builtin_eval_metrics(run.builder, run.builder_params)
        if metrics is None:
            return []
        problem = self.unknown_monitor(["val_loss", *(f"val_{m}" for m in metrics)], evaluated_for=run.builder)
        return [] if problem is None else [(("hooks", index, "monitor"), problem, "error")]
