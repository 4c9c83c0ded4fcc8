"""Phase 4, the result: :class:`TrainResult` from the step loop and the hooks, and ``summary.json``.

:func:`write_result` turns the session's outcome into the :class:`TrainResult` ``train`` returns, writes
this process's ``summary.json`` (``summary-worker1.json`` on another task of a cluster) and raises for a
run that cannot be trusted (an empty ``data.input_fn``, unwritable event files, a non-finite evaluation).
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from hookrun.common.errors import SetupError, TrainingError
from hookrun.common.files import atomic_write_text, describe_write_failure
from hookrun.config_schemas.loader import LoadedConfig
from hookrun.hooks.context import BestCheckpoint, ContributesResult, Evaluations
from hookrun.runner.roles import Role
from hookrun.runner.run_dir.status import StatusRecord
from hookrun.runner.training.prepare import PreparedRun
from hookrun.runner.training.session import SessionOutcome

if TYPE_CHECKING:
    from hookrun.runner.session.trace import TraceSummary


@dataclass
class TrainResult:
    """The outcome of a training run.

    Attributes:
        run_dir: the run directory (absolute).
        initial_step: ``global_step`` restored at the start (0 for a new run).
        final_global_step: ``global_step`` at the end.
        steps: training steps completed in this run (``final_global_step - initial_step``, unless a
            recovered session re-ran the steps since its restored checkpoint); under
            ``session.steps_per_run`` each session call adds the steps its window ran.
        loop_seconds: wall time of the step loop, from the session being ready to the last step's
            end (seconds); ``steps_per_sec`` is ``steps / loop_seconds``.
        end_seconds: wall time after the loop: every hook's ``end`` and the session's close (seconds).
        end_of_data: training ended because the data ran out.
        history: rows of the first ``history_saver`` (whole run, resumed rows included), else empty.
        history_columns: column names of ``history``.
        evaluations: one dict per evaluation in this run: ``step``, ``val_loss``, ``val_<metric>``.
        checkpoint_path: the latest checkpoint prefix in the run directory, or None; None on a cluster
            task other than the chief (it writes no checkpoint).
        notes: lines worth showing the user (device fallback, dropped rows).
        notes_shown: how many of ``notes`` (the first) ``train`` printed on its console as ``note: ...``
            before the session started (the device, the resume); the rest are for the caller to show.
        signal: the signal (SIGINT 2, SIGTERM 15) that stopped training early, or None.
        trace_summary: per-hook cost of the lifecycle trace (``hookrun.runner.session.trace.TraceSummary``),
            or None when tracing was off.
        task: on a cluster, this process's task (``worker:1``, ``ps:0``), else None.
        best: the best evaluation a hook kept (``early_stopping``: step, monitor, value and the checkpoint
            kept in ``best/``), or None.
        start_global_step: ``global_step`` when the step loop started, after every hook's
            ``after_create_session`` (a hook restoring pretrained weights may have moved it from
            ``initial_step``); ``initial_step`` if unreadable.
        stop_reason: why training ended: ``end of data``, ``last_step N reached``, ``stop requested by a
            hook``, ``hooks[1] (custom).after_run() raised StopIteration``, ``signal N``.
    """

    run_dir: Path
    initial_step: int
    final_global_step: int
    steps: int
    loop_seconds: float
    end_of_data: bool
    history: list[dict[str, Any]] = field(default_factory=list)
    history_columns: list[str] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    checkpoint_path: str | None = None
    notes: list[str] = field(default_factory=list)
    notes_shown: int = 0
    signal: int | None = None
    trace_summary: TraceSummary | None = None
    task: str | None = None
    end_seconds: float = 0.0
    best: BestCheckpoint | None = None
    start_global_step: int | None = None
    stop_reason: str = ""

    @property
    def steps_per_sec(self) -> float:
        """Steps per second of the step loop (0 when no step ran)."""
        return self.steps / self.loop_seconds if self.loop_seconds > 0 else 0.0


def served_result(directory: Path, role: Role, seconds: float) -> TrainResult:
    """The result of a process that served and trained nothing (a parameter server): its task and the seconds."""
    return TrainResult(
        run_dir=directory, initial_step=0, final_global_step=0, steps=0, loop_seconds=seconds,
        end_of_data=False, notes=role.notes, task=role.task,
    )


def restored_step(tf: Any, run_dir: Path) -> int:
    """``global_step`` of the latest checkpoint in ``run_dir``, or 0 when there is none."""
    latest = tf.train.latest_checkpoint(str(run_dir))
    if latest is None:
        return 0
    try:
        return int(tf.train.load_variable(latest, "global_step"))
    except (ValueError, tf.errors.NotFoundError):
        return 0


def write_result(
    loaded: LoadedConfig,
    directory: Path,
    console: Console,
    prepared: PreparedRun,
    outcome: SessionOutcome,
    record: StatusRecord | None,
) -> TrainResult:
    """The run's :class:`TrainResult`; ``summary.json`` written (this process's file), the hooks' warnings printed.

    Args:
        loaded: the config.
        directory: the run directory.
        console: where the hooks' warnings print (not after a signal: the CLI says why the run ended).
        prepared: the prepared run.
        outcome: the session phase's outcome.
        record: the chief's ``summary.json`` record (``running``), or None on another task.

    Raises:
        SetupError: a ``data.input_fn`` produced no element.
        TrainingError: the event files could not be written; the last evaluation is not finite (the
            summary says ``failed`` then, and keeps every value).
    """
    tf = prepared.tf
    config = loaded.config
    role = prepared.role
    loop, tracer, closed = outcome.loop, outcome.tracer, outcome.closed
    if config.data.input_fn is not None and loop.end_of_data and loop.steps == 0 and loop.signal is None:
        raise SetupError(
            f"data.input_fn {config.data.input_fn} produced no element: its dataset ended before the first step "
            "(an empty file, or a filter that keeps nothing)"
        )
    if closed is not None:  # an event file could not be written, though training itself succeeded
        raise TrainingError(describe_write_failure(closed) or f"cannot close the event files: {closed}") from closed
    initial_step = prepared.initial_step
    contributions = [h.hook_result() for h in prepared.hooks.instances if isinstance(h, ContributesResult)]
    if loop.signal is None:  # after a signal, the CLI's "interrupted at step N" says why the run ended early
        for line in (w for c in contributions for w in c.warnings):
            console.print(line, style="yellow", markup=False, highlight=False)
    history = next((c for c in contributions if c.history is not None), None)  # the first hook's that keeps one
    final_step = loop.final_global_step
    if final_step is None:
        final_step = restored_step(tf, directory) if loop.steps == 0 else initial_step + loop.steps
    evaluations = prepared.hooks.evaluations or Evaluations([])
    result = TrainResult(
        run_dir=directory,
        initial_step=initial_step,
        final_global_step=final_step,
        steps=loop.steps,
        loop_seconds=loop.loop_seconds,
        end_of_data=loop.end_of_data,
        history=list(history.history or []) if history is not None else [],
        history_columns=list(history.history_columns) if history is not None else [],
        evaluations=[{"step": step, **values} for step, values in evaluations.records],
        # the chief writes the checkpoints
        checkpoint_path=tf.train.latest_checkpoint(str(directory)) if role.is_chief else None,
        notes=prepared.notes,
        notes_shown=prepared.notes_shown,
        signal=loop.signal,
        trace_summary=tracer.summary(loop.loop_seconds) if tracer is not None else None,
        task=role.task,
        end_seconds=loop.end_seconds,
        best=next((c.best for c in contributions if c.best is not None), None),
        start_global_step=loop.start_global_step if loop.start_global_step is not None else initial_step,
        stop_reason=loop.stop_reason,
    )
    summary = {
        "steps": result.steps,
        "loop_seconds": round(result.loop_seconds, 6),
        "steps_per_sec": round(result.steps_per_sec, 3),
        "end_seconds": round(result.end_seconds, 6),
        "initial_step": result.initial_step,
        "final_global_step": result.final_global_step,
        "end_of_data": result.end_of_data,
        "start_global_step": result.start_global_step,
        "stop_reason": result.stop_reason,
    }
    if result.evaluations:
        summary["validation"] = result.evaluations[-1]
    overflow = non_finite_evaluation(result.evaluations) if result.signal is None else None
    if record is not None:
        status = "interrupted" if result.signal is not None else "failed" if overflow else "finished"
        summary.update(record.fields(status))
        if result.signal is not None:
            summary["signal"] = result.signal
        if overflow:
            summary["error"] = f"TrainingError: {overflow}"
    for contribution in contributions:
        summary.update(contribution.summary)
    if result.task is not None:  # a cluster's task: its own summary file says which it is
        summary["task"] = result.task
    atomic_write_text(directory / role.task_file("summary.json"), json.dumps(summary, indent=2) + "\n")
    if overflow:
        if record is not None:
            record.written = True  # the summary above says `failed` and keeps every value: not rewritten
        raise TrainingError(overflow)
    return result


def non_finite_evaluation(evaluations: list[dict[str, Any]]) -> str | None:
    """Why the run's last evaluation cannot be trusted, or None: a value that is ``inf`` or NaN.

    A run whose final ``val_rmse`` is ``inf`` (a metric that overflowed float32, e.g. multiplied back by a
    large ``data.label_scale``) has not produced a usable model, whatever its exit code would say.

    Args:
        evaluations: :attr:`TrainResult.evaluations` (``step`` and ``val_*`` values).

    Returns:
        One line naming the step and the values, or None.
    """
    if not evaluations:
        return None
    last = evaluations[-1]
    bad = [f"{name} {float(value)}" for name, value in last.items()  # numpy's float32 is no Python float
           if name != "step" and isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)
           and not math.isfinite(float(value))]
    if not bad:
        return None
    return (
        f"the last evaluation (step {last.get('step')}) is not finite: {', '.join(bad)} (a value overflowed float32, "
        "e.g. through data.label_scale, or training diverged); the checkpoints are kept"
    )
