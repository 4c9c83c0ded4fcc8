"""``early_stopping``: stop when a validation value stops improving, as ``stop_if_no_decrease_hook``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import tensorflow as tf

from hookrun.common.errors import SetupError
from hookrun.common.files import atomic_write_text, loads_json
from hookrun.common.numbers import format_number
from hookrun.hooks.context import BestCheckpoint, Evaluations, HookConfigError, HookContext, HookResult
from hookrun.hooks.early_stopping import EarlyStoppingConfig
from hookrun.hooks.evaluation import NO_VALIDATION_DATA

#: File beside the best checkpoint: ``{"step", "monitor", "value"}``.
BEST_FILE = "best.json"


class EarlyStoppingHook(tf.compat.v1.train.SessionRunHook):
    """Request a stop after ``patience`` evaluations without improvement.

    Mirrors ``tf.estimator.experimental.stop_if_no_decrease_hook`` (and
    ``stop_if_no_increase_hook`` with ``mode: max``), counting evaluations
    like Keras' ``EarlyStopping`` instead of steps. It reads the results the
    ``evaluation`` hook publishes to ``evaluations``; placed after that hook,
    it sees an evaluation in the same step's ``after_run``.

    An evaluation improves when its ``monitor`` value is below ``best -
    min_delta`` (``min``) or above ``best + min_delta`` (``max``); the first
    always does. After ``patience`` evaluations in a row that do not, it
    prints one line saying why and calls ``run_context.request_stop()``.

    When each method fires:

    - ``begin``: creates the ``Saver`` for the best checkpoint (``keep_best``).
    - ``after_create_session``: with ``keep_best`` and no saved state, reads ``best/best.json``
      so a resumed run only replaces the best checkpoint with a better one.
    - ``state_dict``/``load_state_dict`` (:mod:`hookrun.hooks.state`): ``best``, ``best_step``
      and ``wait`` are saved with each checkpoint and given back when it is restored, so
      patience goes on counting across a resume, with or without ``keep_best``.
    - ``after_run``: looks at the evaluations published since the last call;
      saves a new best (``keep_best``); stops when patience runs out.
    - ``end``: looks at the final evaluation (a new best is still saved).

    Args:
        evaluations: the shared validation results.
        monitor: the watched name, e.g. ``val_loss``.
        mode: ``min`` or ``max``.
        patience: evaluations without improvement before stopping (count, > 0).
        min_delta: least change that counts as an improvement (the monitor's units, >= 0).
        best_dir: directory for the best checkpoint, or None (``keep_best: false``).
        console: a ``rich`` console for the stop line, or None.

    Attributes:
        best: the best value so far, or None.
        best_step: the global step of ``best``, or None.
        wait: evaluations since the last improvement (count).
        stopped_at: the global step at which a stop was requested, or None.
    """

    def __init__(
        self,
        evaluations: Evaluations,
        monitor: str = "val_loss",
        mode: str = "min",
        patience: int = 5,
        min_delta: float = 0.0,
        best_dir: Path | None = None,
        console: Any = None,
    ) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be min or max, got {mode!r}")
        if patience <= 0 or min_delta < 0:
            raise ValueError("patience must be positive and min_delta non-negative")
        self.evaluations = evaluations
        self.monitor = monitor
        self.mode = mode
        self.patience = patience
        self.min_delta = min_delta
        self.best_dir = best_dir
        self.best: float | None = None
        self.best_step: int | None = None
        self.wait = 0
        self.stopped_at: int | None = None
        self._console = console
        self._seen = 0
        self._saver: Any = None

    def begin(self) -> None:
        """Create the best checkpoint's ``Saver`` (before the graph is finalized)."""
        if self.best_dir is not None:
            # Relative paths in best/checkpoint: the best checkpoint stays valid when the run directory moves.
            self._saver = tf.compat.v1.train.Saver(max_to_keep=1, name="best_saver", save_relative_paths=True)

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Skip evaluations published before this session; restore the best value of a resumed run."""
        self._seen = len(self.evaluations.records)
        if self.best_dir is not None and self.best is None:
            state = read_best(self.best_dir / BEST_FILE)
            if state is not None and state["monitor"] == self.monitor:
                self.best, self.best_step = float(state["value"]), int(state["step"])

    def state_dict(self) -> dict[str, Any]:
        """``best``, ``best_step`` and ``wait`` for the checkpoint being written (see :mod:`hookrun.hooks.state`)."""
        return {
            "monitor": self.monitor,
            "mode": self.mode,
            "best": self.best,
            "best_step": self.best_step,
            "wait": self.wait,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take back ``best``, ``best_step`` and ``wait`` saved with the restored checkpoint (same monitor and mode)."""
        if state.get("monitor") != self.monitor or state.get("mode") != self.mode:
            return
        self.best = None if state["best"] is None else float(state["best"])
        self.best_step = None if state["best_step"] is None else int(state["best_step"])
        self.wait = int(state["wait"])

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Consider new evaluations; request a stop when patience has run out."""
        if self._consider_new(run_context.session) and self.stopped_at is None:
            self.stopped_at = self.evaluations.records[-1][0]
            if self._console is not None:
                self._console.print(
                    f"early stopping at step {self.stopped_at}: {self.reason()}", highlight=False, soft_wrap=True
                )
            run_context.request_stop()

    def end(self, session: Any) -> None:
        """Consider the final evaluation (it may still be a new best to keep)."""
        self._consider_new(session)

    def hook_result(self) -> HookResult:
        """The best evaluation (and, with ``keep_best``, its checkpoint), for the run's end and ``summary.json``."""
        if self.best_step is None or self.best is None:
            return HookResult()
        path = None
        if self.best_dir is not None:
            prefix = self.best_dir / f"model.ckpt-{self.best_step}"
            path = str(prefix) if prefix.with_name(prefix.name + ".index").exists() else None
        best = BestCheckpoint(step=self.best_step, monitor=self.monitor, value=self.best, path=path)
        kept = {**asdict(best), "path": f"best/{Path(path).name}" if path else None}  # relative: the run may move
        return HookResult(best=best, summary={"best": kept})

    def reason(self) -> str:
        """Why training stops, e.g. ``val_loss has not improved for 3 evaluations (best 0.2791 at step 2580)``."""
        delta = f" by more than {self.min_delta:g}" if self.min_delta else ""
        return (
            f"{self.monitor} has not {'decreased' if self.mode == 'min' else 'increased'}{delta} for "
            f"{self.wait} evaluation(s) (best {format_number(self.best)} at step {self.best_step})"
        )

    def improves(self, value: float) -> bool:
        """Whether ``value`` beats the best so far by more than ``min_delta``."""
        if self.best is None:
            return True
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def _consider_new(self, session: Any) -> bool:
        """Process unseen evaluations; return True when patience has run out."""
        records = self.evaluations.records[self._seen :]
        self._seen = len(self.evaluations.records)
        for step, values in records:
            value = values[self.monitor]
            if self.improves(value):
                self.best, self.best_step, self.wait = value, step, 0
                self._save_best(session, step, value)
            else:
                self.wait += 1
        return self.wait >= self.patience

    def _save_best(self, session: Any, step: int, value: float) -> None:
        if self._saver is None or self.best_dir is None:
            return
        self.best_dir.mkdir(parents=True, exist_ok=True)
        self._saver.save(session, str(self.best_dir / "model.ckpt"), global_step=step, write_meta_graph=False)
        state = {"step": step, "monitor": self.monitor, "value": value}
        atomic_write_text(self.best_dir / BEST_FILE, json.dumps(state, indent=2) + "\n")


def read_best(path: Path) -> dict[str, Any] | None:
    """The ``best.json`` of a resumed run (``{"step", "monitor", "value"}``), or None when there is none.

    Raises:
        SetupError: the file is damaged (exit 2), naming it and the fix.
    """
    if not path.exists():
        return None
    try:
        state = loads_json(path.read_text(encoding="utf-8"))
        state = {"step": int(state["step"]), "monitor": str(state["monitor"]), "value": float(state["value"])}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SetupError(
            f"{path}: damaged ({type(err).__name__}: {err}); delete it to let the next evaluations choose "
            "the best checkpoint again"
        ) from None
    return state


def build(config: EarlyStoppingConfig, ctx: HookContext) -> EarlyStoppingHook:
    """Build the ``early_stopping`` hook on the run's shared evaluation results.

    Raises:
        HookConfigError: no evaluation runs (no validation data), or ``monitor`` is not one of
            the evaluation's names (the message lists them).
        SetupError: ``best/best.json`` of a resumed run is damaged, or ``best`` is a symlink (checked
            now, before training).
    """
    if ctx.evaluations is None:
        raise HookConfigError(NO_VALIDATION_DATA)
    problem = config.unknown_monitor(ctx.evaluations.names)
    if problem is not None:
        raise HookConfigError(f"monitor {problem}")
    if config.keep_best:
        best = ctx.run_dir / "best"
        if best.is_symlink():  # the best checkpoint and best.json are written there: never through a link
            raise SetupError(f"{best}: is a symlink; remove it (keep_best writes the best checkpoint there)")
        read_best(best / BEST_FILE)
    return EarlyStoppingHook(
        evaluations=ctx.evaluations,
        monitor=config.monitor,
        mode=config.mode,
        patience=config.patience,
        min_delta=config.min_delta,
        best_dir=ctx.run_dir / "best" if config.keep_best else None,
        console=ctx.console,
    )
