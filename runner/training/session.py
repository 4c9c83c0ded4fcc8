"""Phase 3, the session: the hooks wrapped (trace, hook state), the role's session, the monitored step loop.

:func:`run_session` runs :func:`hookrun.runner.session.monitored.run_monitored` on the prepared graph and
hooks, with the session the role creates (``session.engine``'s in one process, TensorFlow's
``MonitoredSession`` on a cluster task's server), then closes everything, on success and on failure, and
lets the role finish (a cluster's end-of-run protocol, a failed local run's temporary files).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from hookrun.config_schemas.loader import LoadedConfig
from hookrun.runner.run_dir.directory import close_summary_writers, writer_thread_errors_deferred
from hookrun.runner.run_dir.hparams import write_hparams
from hookrun.runner.session.monitored import LoopResult, run_monitored
from hookrun.runner.tf_env import tf_logging_to
from hookrun.runner.training.prepare import PreparedRun

if TYPE_CHECKING:
    from hookrun.runner.session.trace import TraceRecorder


@dataclass
class SessionOutcome:
    """What the session phase hands the result phase.

    Attributes:
        loop: the step loop's result (steps, seconds, end of data, signal, stop reason).
        tracer: the lifecycle trace's recorder (closed), or None when tracing was off.
        closed: the error closing the event files raised, or None (training itself succeeded then).
    """

    loop: LoopResult
    tracer: TraceRecorder | None
    closed: BaseException | None


def run_session(
    loaded: LoadedConfig,
    directory: Path,
    console: Console,
    verbose: bool,
    prepared: PreparedRun,
    trace: bool = False,
) -> SessionOutcome:
    """Wrap the hooks, create the role's session, run the step loop; close everything whatever happens.

    Args:
        loaded: the config.
        directory: the run directory (created and written by :func:`~hookrun.runner.training.lifecycle.begin_run`).
        console: where the hooks and TensorFlow's logs print.
        verbose: show TensorFlow's INFO logs.
        prepared: the prepared run; :meth:`PreparedRun.close` runs after the session, and the role's
            finish notes are added to its notes.
        trace: record every hook call (also on with ``session.trace``; :mod:`hookrun.runner.session.trace`).

    Raises:
        TrainingError, SetupError, HookFailure: as :func:`hookrun.runner.session.monitored.run_monitored`.
    """
    tf = prepared.tf
    config = loaded.config
    role = prepared.role
    run_hooks = prepared.hooks

    hooks, tracer = run_hooks.instances, None
    if trace or config.session.trace:  # off: hooks are not wrapped at all
        from hookrun.runner.session.plan import plan as hook_plan
        from hookrun.runner.session.trace import TRACE_FILE, TraceRecorder

        tracer = TraceRecorder(directory / role.task_file(TRACE_FILE), prepared.built.global_step, run_hooks.clock)
        names = [planned.name for planned in hook_plan(run_hooks.configs)] + run_hooks.spec_names
        hooks = tracer.wrap(hooks, names)
    labels = run_hooks.labels
    if role.is_chief:  # hook state beside each checkpoint (hookrun.hooks.state); the chief writes the checkpoints
        from hookrun.hooks.state import HookStates

        states = HookStates(
            run_hooks.instances,
            [label.partition(" ")[0] for label in labels],
            prepared.built.global_step,
            lambda: run_hooks.scaffold.saver,
            directory,
        )
        if states:  # first: load before any after_create_session; last: save once every hook has run
            hooks = [states.loader, *hooks, states.writer]
            labels = ["hook state (load)", *labels, "hook state (save)"]
    completed = False
    try:
        setup = role.session_setup(
            tf, config, prepared.placement, hooks=hooks, scaffold=run_hooks.scaffold, directory=directory,
            console=console, graph=prepared.built.graph,
        )
        with prepared.built.graph.as_default(), tf_logging_to(console, verbose), writer_thread_errors_deferred():
            if role.is_chief:  # TensorBoard's HParams: the config's and --set's values, at the run directory's top
                write_hparams(directory, loaded)
            loop = run_monitored(
                tf,
                prepared.built.train_op,
                hooks,
                run_hooks.scaffold,
                directory,
                setup.config,
                prepared.initial_step,
                engine=config.session.engine,
                session_factory=setup.factory,
                hook_labels=labels,
                steps_per_run=config.session.steps_per_run,
                window_bound=prepared.built.window.bound if prepared.built.window is not None else None,
            )
        completed = True
    finally:
        if tracer is not None:
            tracer.close()
        prepared.close()
        closed = close_summary_writers(tf)
        # one process: the temporary files a failed write left; a cluster: the chief stops the other tasks,
        # a worker tells the chief it stopped
        prepared.notes.extend(role.finish(completed, directory))
    return SessionOutcome(loop, tracer, closed)
