"""``train(config) -> TrainResult``: the Python API behind ``hookrun train``, the phases in order.

The phases are in :mod:`hookrun.runner.training` (prepare, lifecycle, session, result); what depends on the
kind of process (one process, a cluster task; one device or towers) is the run's role
(:mod:`hookrun.runner.roles`). ``TrainResult`` is re-exported here, beside the function that returns it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from rich.console import Console

from hookrun.config_schemas.loader import LoadedConfig
from hookrun.runner.roles import resolve_role
from hookrun.runner.run_dir.directory import resolve_run_dir
from hookrun.runner.training.lifecycle import begin_run, held_run_dir, run_dir_for
from hookrun.runner.training.prepare import prepare
from hookrun.runner.training.result import TrainResult, served_result, write_result
from hookrun.runner.training.session import run_session

__all__ = ["TrainResult", "train"]


def train(
    loaded: LoadedConfig,
    *,
    run_dir: Path | None = None,
    console: Console | None = None,
    verbose: bool = False,
    allow_config_change: bool = False,
    trace: bool = False,
    task: str | None = None,
) -> TrainResult:
    """Train the model a config describes, running exactly its hooks in order.

    Steps: the role (one process, or this task of a cluster: ``cluster:`` or ``TF_CONFIG``) checked before
    TensorFlow loads; the run directory locked; :func:`~hookrun.runner.training.prepare.prepare` (data,
    device, graph, hooks: every tensor name is resolved before training); the run directory created and
    checked writable, the resolved ``config.yaml`` (and ``preprocessing.json``) written
    (:func:`~hookrun.runner.training.lifecycle.begin_run`); the monitored session run
    (:func:`~hookrun.runner.training.session.run_session`); ``summary.json`` written
    (:func:`~hookrun.runner.training.result.write_result`). Re-running with the same run directory resumes
    from its latest checkpoint.

    Args:
        loaded: a config from :func:`hookrun.config_schemas.loader.load_config`.
        run_dir: overrides the config's run directory.
        console: where progress and logs go (default: a new ``rich`` console).
        verbose: show TensorFlow's INFO logs.
        allow_config_change: resume even when the graph or data shape differs
            from the run directory's saved ``config.yaml``.
        trace: record every hook call to ``<run_dir>/trace.jsonl`` (also on with
            ``session.trace: true``); see :mod:`hookrun.runner.session.trace`.
        task: on a cluster (``cluster:`` or ``TF_CONFIG``), this process's task, e.g. ``worker:1``
            (default: ``TF_CONFIG``'s); see :mod:`hookrun.runner.cluster.plan`. A ``ps`` task serves
            until the chief finishes; a worker other than the chief neither locks the run
            directory nor writes the run's own files (its own carry the task: ``summary-worker1.json``).

    Returns:
        The result, with the history rows (and ``trace_summary`` when tracing).

    Raises:
        ConfigError: a hook names an unknown tensor (exit 2; file:line given).
        SetupError: bad data, a missing GPU, an unwritable run directory or one
            in use by another process, a resumed run whose graph or data shape
            changed (with the diff), a builder or hook that does not import (exit 2).
        TrainingError: training failed (exit 1).
    """
    console = console or Console()
    directory = resolve_run_dir(run_dir_for(loaded, run_dir))
    role = resolve_role(loaded.config, task)  # TF_CONFIG or `cluster:`; else one process
    role.check(loaded.config)  # e.g. a port in use, an unreachable ps: exit 2 before TensorFlow loads
    if not role.trains:  # a parameter server
        return served_result(directory, role, role.serve(console, verbose))
    with held_run_dir(directory, role) as create_run_dir:
        # Reading the data, importing TensorFlow and building the graph take seconds: say so (a terminal only;
        # the progress bar's live display starts after it)
        status = console.status("reading the data and building the graph…") if console.is_terminal else None
        with status or contextlib.nullcontext():
            prepared = prepare(loaded, directory, console, verbose, role=role)
        try:  # on any failure before the session too (a refused config change): the warm start's pinned copy goes
            record = begin_run(loaded, directory, console, prepared, create_run_dir, allow_config_change)
            try:
                outcome = run_session(loaded, directory, console, verbose, prepared, trace)
                return write_result(loaded, directory, console, prepared, outcome, record)
            except BaseException as err:
                if record is not None and not record.written:
                    record.write_failed(err)
                raise
        finally:
            prepared.close()
