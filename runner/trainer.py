"""``train(config) -> TrainResult``: the Python API behind ``hookrun train``."""

from __future__ import annotations

import contextlib
import json
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from hookrun.common.errors import PlacedError, SetupError, TrainingError
from hookrun.common.files import atomic_write_text, describe_write_failure
from hookrun.config_schemas.loader import ConfigError, LoadedConfig
from hookrun.config_schemas.run_files import TRAIN_EVENT_DIR
from hookrun.hooks.context import (
    BestCheckpoint,
    ContributesResult,
    Evaluations,
    HookConfigError,
    HookContext,
    TensorNames,
    UnknownTensorError,
)
from hookrun.hooks.registry import build_hook
from hookrun.hooks.step_clock import StepClock
from hookrun.runner.cluster.plan import check_addresses, resolve_cluster
from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.reader import steps_per_run
from hookrun.runner.data.source import open_source
from hookrun.runner.graph.build import build_graph
from hookrun.runner.graph.device import describe_tensorflow, resolve_device, session_config
from hookrun.runner.graph.run_config import make_run_info
from hookrun.runner.graph.tensor_names import check_tensor_names
from hookrun.runner.live import current_saving_listeners
from hookrun.runner.run_dir.checkpoints import Resume, find_checkpoint, write_checkpoint_state
from hookrun.runner.run_dir.config_change import compare_configs
from hookrun.runner.run_dir.directory import (
    RunDirLock,
    check_adoptable,
    check_event_dirs,
    clean_temporary_files,
    close_summary_writers,
    prepare_run_dir,
    read_saved_config,
    resolve_run_dir,
    writer_thread_errors_deferred,
)
from hookrun.runner.run_dir.hparams import write_hparams
from hookrun.runner.run_dir.saved_config import self_contained_yaml
from hookrun.runner.run_dir.status import StatusRecord, begin_record
from hookrun.runner.session.monitored import run_monitored
from hookrun.runner.tf_env import import_tensorflow, tf_logging_to

PREPROCESSING_FILE = "preprocessing.json"
#: ``max_to_keep`` of the session's Saver when no hook asks for more (``tf.compat.v1.train.Saver``'s default).
DEFAULT_MAX_TO_KEEP = 5


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
    trace_summary: Any = None
    task: str | None = None
    end_seconds: float = 0.0
    best: BestCheckpoint | None = None
    start_global_step: int | None = None
    stop_reason: str = ""

    @property
    def steps_per_sec(self) -> float:
        """Steps per second of the step loop (0 when no step ran)."""
        return self.steps / self.loop_seconds if self.loop_seconds > 0 else 0.0


def run_dir_for(loaded: LoadedConfig, override: Path | None = None) -> Path:
    """The run directory: ``override``, else ``session.run_dir`` (relative to the config), else ``runs/<name>``.

    ``runs/<name>`` is relative to the current directory, like TensorFlow's ``model_dir``.
    """
    if override is not None:
        return override
    if loaded.config.session.run_dir is not None:
        return loaded.base_dir / loaded.config.session.run_dir
    return Path("runs") / loaded.config.name


def restored_step(tf: Any, run_dir: Path) -> int:
    """``global_step`` of the latest checkpoint in ``run_dir``, or 0 when there is none."""
    latest = tf.train.latest_checkpoint(str(run_dir))
    if latest is None:
        return 0
    try:
        return int(tf.train.load_variable(latest, "global_step"))
    except (ValueError, tf.errors.NotFoundError):
        return 0


def expected_last_step(loaded: LoadedConfig, num_rows: int | None, initial_step: int) -> int | None:
    """Global step where training should end: the earliest ``stop_at_step``, or the data's end; None if unbounded.

    ``num_rows`` None (a ``data.input_fn``, whose size hookrun does not know): ``stop_at_step`` alone.
    """
    candidates = [step for hook in loaded.config.hooks if (step := hook.ends_at_step(initial_step)) is not None]
    data = loaded.config.data
    data_steps = None if num_rows is None else steps_per_run(num_rows, data.batch_size, data.epochs)
    if data_steps is not None:
        candidates.append(data_steps)
    return min(candidates) if candidates else None


@dataclass(kw_only=True)
class PreparedRun:
    """A graph with its hooks, ready for the session (nothing run, nothing written).

    Attributes:
        tf: the ``tensorflow`` module.
        built: the graph, ``train_op`` and named tensors.
        hooks: ``SessionRunHook`` instances, in config order.
        scaffold: the session's :class:`hookrun.runner.session.scaffold.Scaffold` (its saver, with the
            checkpoint_saver's ``max_to_keep``, is built after every hook's ``begin()``).
        plan: the device plan.
        initial_step: ``global_step`` restored from the run directory (0 if none).
        preprocessor: the fitted (or, when resuming, saved) preprocessing state; None with ``data.input_fn``.
        on_close: callables to run after the session, on success and failure; :meth:`close` runs them.
        notes: lines for the user.
        evaluations: the validation results shared by the hooks, or None without an evaluation.
        cluster: on a cluster, this task's :class:`hookrun.runner.cluster.session.ClusterRun`, else None.
        hook_configs: the ``hooks:`` entries this task runs (all of them without a cluster), the
            configs of ``hooks``, in the same order.
        hook_labels: per hook, its place and name for messages: ``hooks[2] (custom my_hooks:Counter)``.
        spec_hook_names: the names of a model_fn's ``training_hooks`` and, on the chief,
            ``training_chief_hooks`` (the last hooks of ``hooks``), as the trace and ``validate --build``
            show them: ``training_hooks[0] MyHook``, ``training_chief_hooks[0] MyHook``.
        resume: the checkpoint the run resumes from, found from the run directory's files.
        clock: the step clock the hooks share (:class:`hookrun.hooks.step_clock.StepClock`).
    """

    tf: Any
    built: Any
    hooks: list[Any]
    scaffold: Any
    plan: Any
    initial_step: int
    preprocessor: Preprocessor | None
    on_close: list[Any]
    notes: list[str]
    evaluations: Evaluations | None = None
    cluster: Any = None
    hook_configs: list[Any] = field(default_factory=list)
    hook_labels: list[str] = field(default_factory=list)
    spec_hook_names: list[str] = field(default_factory=list)
    resume: Resume = field(default_factory=Resume)
    clock: Any = None
    notes_shown: int = 0

    def close(self) -> None:
        """Run every ``on_close`` callable once, in order (later calls do nothing).

        Called after the session, and by :func:`train` when it fails before the session (a refused
        config change, an unwritable run directory), so a warm start's pinned checkpoint copy is
        removed then too.
        """
        pending, self.on_close = self.on_close, []
        for close in pending:
            close()


def prepare(
    loaded: LoadedConfig, directory: Path, console: Console, verbose: bool = False, cluster: Any = None
) -> PreparedRun:
    """Read the data, resolve the device, build the graph and every hook; create no session, write nothing.

    ``directory`` need not exist: it is only read (for the latest checkpoint
    and saved preprocessing) and handed to hooks as the place they will write.

    The data: the training file is read and the validation rows split off
    (or the validation file read); the preprocessing is fitted on the
    training rows, or, when the run resumes from a checkpoint, loaded from
    ``preprocessing.json`` and checked against the config. With an
    ``evaluation`` hook the graph gets its evaluation part and the hooks share
    one :class:`~hookrun.hooks.context.Evaluations`.

    Args:
        loaded: the config.
        directory: the run directory (absolute).
        console: where hooks will print.
        verbose: show TensorFlow's INFO logs.
        cluster: on a cluster, this task's ``ClusterRun``: the graph is placed with
            ``replica_device_setter``, the data sharded, ``chief_only`` hooks left out elsewhere.

    Returns:
        The prepared run.

    Raises:
        ConfigError: hooks name unknown tensors (exit 2; one issue per name, at its line, with a
            "did you mean" over the whole graph); ``graph.builder`` does not import, fails or
            returns no scalar loss, or a custom hook's class or function does not import (at its line).
        SetupError: bad data, a missing GPU, a builder or hook that does not import (exit 2).
    """
    config = loaded.config
    tasks = [str(t) for t in cluster.plan.training_tasks] if cluster is not None else []
    # the data: the user's input_fn, or files (one streaming pass before TensorFlow loads; every task refuses a
    # cluster on which one would get no rows)
    source = open_source(loaded, tasks)
    notes: list[str] = []

    tf = import_tensorflow(verbose)
    plan = resolve_device(
        config.device, len(tf.config.list_physical_devices("GPU")), config.session.allow_soft_placement
    )
    if plan.note:
        notes.append(plan.note)
    if not plan.uses_gpu:  # set for a GPU, on a CPU: say they change nothing here rather than let them look active
        idle = [f"session.{key}" for key in ("mixed_precision", "allow_growth", "per_process_gpu_memory_fraction")
                if getattr(config.session, key)]
        if idle:
            notes.append(
                f"{', '.join(idle)}: the model runs on the CPU; the float16 rewrite and the GPU memory options "
                "act on GPUs only (docs/devices.md)"
            )
    resume = find_checkpoint(tf, directory)  # from the files: a lost or stale state file is no fresh start
    initial_step = resume.step
    notes.extend(resume.notes)

    from hookrun.runner.data.input_fn import input_context

    # On a cluster each training task reads its shard: tf.distribute's InputContext, given to a user's
    # input_fn (when it names input_context) and followed by the built-in reader (its files, or rows; it
    # skips its share of the trained batches)
    context = input_context(tf, cluster.plan if cluster is not None else None)
    source.open(directory / PREPROCESSING_FILE, initial_step, notes, context)
    preprocessor, data, validation, total_rows = source.preprocessor, source.train, source.validation, source.num_rows
    # (index in hooks:, config) of the hooks this task runs: chief_only ones run on the chief alone.
    running = [(i, h) for i, h in enumerate(config.hooks) if cluster is None or cluster.plan.runs(h)]
    unpin = _nothing  # removes the warm start's pinned checkpoint, after the session (an on_close)
    try:
        built = build_graph(
            tf,
            config,
            data,
            loaded.base_dir,
            plan,
            initial_step if cluster is None else initial_step // len(cluster.plan.training_tasks),
            validation=validation if any(h.needs_evaluation() for _, h in running) else None,
            label_scale=preprocessor.label_scale if preprocessor is not None else 1.0,
            device_function=cluster.device_function() if cluster is not None else None,
            wrap_optimizer=cluster.wrap_optimizer() if cluster is not None else None,
            # steps_per_run > 1: the named tensors the hooks read; all of them (and global_step's last-step
            # read) when a hook may fetch any tensor (a custom hook)
            carry=None if any(hook.fetches_unknown_tensors() for _, hook in running)
            else {name for _, hook in running for _, name in hook.tensor_names()},
            run_dir=directory,
            # a model_fn's (and input_fn's) `config`: Estimator's RunConfig, from this run and task
            run_info=make_run_info(
                config, directory, cluster=cluster.plan if cluster is not None else None, tf=tf,
                session_config=_session_config(tf, config, plan),
            ),
        )
        if config.graph.warm_start is not None:
            unpin = _warm_start(tf, built.graph, loaded, resume, cluster, notes)
        # where a resumed run continues in its data: skipped batches (files), a saved iterator state (input_fn)
        input_state, input_notes = source.position(
            tf, built.graph, resume_path=resume.path if initial_step > 0 else None,
            ended_at_data_end=_ended_at_data_end(directory, initial_step), on_cluster=cluster is not None,
            own_saver=getattr(built.spec.scaffold, "saver", None) is not None,
        )
        notes.extend(input_notes)
    except PlacedError as err:  # graph.builder does not import, fails or returns no scalar loss: at its line
        raise ConfigError([loaded.issue(err.loc, err.reason)]) from None
    try:
        hooks = _build_hooks(
            loaded,
            running,
            built,
            tf=tf,
            directory=directory,
            console=console,
            cluster=cluster,
            initial_step=initial_step,
            last_step=expected_last_step(loaded, total_rows, initial_step),
            steps_per_epoch=total_rows / loaded.config.data.batch_size if cluster is None and total_rows else None,
            input_state=input_state,
        )
    except BaseException:
        unpin()
        raise
    # A model_fn's EstimatorSpec.training_hooks run after the config's hooks, in their order (as Estimator
    # appended them to its own), then its training_chief_hooks on the chief only (MonitoredTrainingSession's
    # chief_only_hooks come after its hooks); they have no config entry, so the trace and messages name them
    # by field and class.
    spec_hooks, spec_names = spec_training_hooks(built.spec, chief=cluster is None or cluster.plan.is_chief)
    return PreparedRun(
        tf=tf,
        built=built,
        hooks=hooks.hooks + spec_hooks,
        scaffold=hooks.scaffold,
        plan=plan,
        initial_step=initial_step,
        preprocessor=preprocessor,
        on_close=[*hooks.on_close, unpin],
        notes=notes,
        evaluations=hooks.evaluations,
        cluster=cluster,
        hook_configs=[h for _, h in running],
        hook_labels=[_hook_label(index, hook_config) for index, hook_config in running]
        + [f"{name} (from graph.builder's EstimatorSpec)" for name in spec_names],
        spec_hook_names=spec_names,
        resume=resume,
        clock=hooks.clock,
    )


def _session_config(tf: Any, config: Any, plan: Any) -> Any:
    """The training session's ``ConfigProto`` from ``session:`` and the device plan (:func:`session_config`)."""
    return session_config(
        tf,
        plan,
        config.session.intra_op_parallelism_threads,
        config.session.inter_op_parallelism_threads,
        mixed_precision=config.session.mixed_precision,
        global_jit_level=config.session.global_jit_level,
        allow_growth=config.session.allow_growth,
        per_process_gpu_memory_fraction=config.session.per_process_gpu_memory_fraction,
    )


def _nothing() -> None:
    """Nothing to undo (no checkpoint pinned)."""


def _warm_start(
    tf: Any, graph: Any, loaded: LoadedConfig, resume: Resume, cluster: Any, notes: list[str]
) -> Callable[[], None]:
    """Apply ``graph.warm_start`` to a run directory without a checkpoint; a resume restores its own instead.

    On a cluster only the chief initialises the variables, so only it reads the warm-start checkpoint.

    Returns:
        What removes the pinned copy of the warm-start checkpoint: call it once the session is closed
        (the initializers read that copy; see :func:`hookrun.runner.run_dir.checkpoints.pin_checkpoint`).

    Raises:
        PlacedError: the warm-start source does not fit (see :func:`hookrun.runner.graph.warm_start.warm_start`).
    """
    if resume.path is not None:
        notes.append(
            f"graph.warm_start not applied: resuming from this run's own checkpoint (global step {resume.step})"
        )
        return _nothing
    if cluster is not None and not cluster.plan.is_chief:
        return _nothing
    from hookrun.runner.graph.warm_start import warm_start

    report = warm_start(tf, graph, loaded.config.graph.warm_start, loaded.base_dir)
    notes.append(report.note())
    return report.close


def spec_training_hooks(spec: Any, chief: bool) -> tuple[list[Any], list[str]]:
    """A model_fn's training hooks as this task runs them, after the config's, and their names.

    ``EstimatorSpec.training_hooks``, then (on the chief only) ``training_chief_hooks``: the order
    ``tf.estimator`` ran them in (``MonitoredTrainingSession(hooks=..., chief_only_hooks=...)`` calls the
    chief-only hooks after the others).

    Args:
        spec: the ``train``-mode :class:`~hookrun.runner.graph.builders.spec.GraphSpec`.
        chief: this task is the chief (always, without a cluster).

    Returns:
        ``(hooks, names)``; a name reads ``training_hooks[0] MyHook`` or ``training_chief_hooks[0] MyHook``.
    """
    fields = ["training_hooks"] + (["training_chief_hooks"] if chief else [])
    hooks: list[Any] = []
    names: list[str] = []
    for name in fields:
        for index, hook in enumerate(getattr(spec, name)):
            hooks.append(hook)
            names.append(f"{name}[{index}] {type(hook).__name__}")
    return hooks, names


def _ended_at_data_end(directory: Path, step: int) -> bool:
    """The run directory's last session ended at the end of its data at global step ``step`` (``summary.json``)."""
    from hookrun.runner.run_dir.status import read_summary

    summary = read_summary(directory / "summary.json") if step > 0 else None
    return bool(summary and summary.get("end_of_data") and summary.get("final_global_step") == step)


@dataclass
class _BuiltHooks:
    """The hook concern of :func:`prepare`: the hooks, the scaffold they share, what runs after the session."""

    hooks: list[Any]
    scaffold: Any
    on_close: list[Any]
    evaluations: Evaluations | None
    clock: Any = None


def _build_hooks(
    loaded: LoadedConfig,
    running: list[tuple[int, Any]],
    built: Any,
    *,
    tf: Any,
    directory: Path,
    console: Console,
    cluster: Any,
    initial_step: int,
    last_step: int | None,
    steps_per_epoch: float | None = None,
    input_state: Any = None,
) -> _BuiltHooks:
    """Build the Scaffold and every hook this task runs, resolving every tensor name first.

    Raises:
        ConfigError: a hook names unknown tensors (all of them at once), its settings do not fit the
            graph, or a custom hook's class or function does not import (at its line).
    """
    evaluations = Evaluations(names=list(built.evaluation.values)) if built.evaluation is not None else None
    hooks: list[Any] = []
    on_close: list[Any] = []
    with built.graph.as_default():
        max_to_keep = max(  # every hook of the config, those of other tasks too: one Saver for the cluster
            (keep for h in loaded.config.hooks if (keep := h.checkpoints_to_keep()) is not None),
            default=DEFAULT_MAX_TO_KEEP,
        )
        from hookrun.runner.session.scaffold import Scaffold

        # The Saver, init and ready ops are built by finalize(), after every hook's begin() (TensorFlow's order),
        # with relative paths in the `checkpoint` state file: a moved or copied run directory resumes from its files.
        # A model_fn's EstimatorSpec.scaffold: its fields (init_op, init_fn, saver, ready_op, ...) are copied
        # into ours (Scaffold's copy_from_scaffold); a saver it gives replaces the default one.
        scaffold = Scaffold(max_to_keep=max_to_keep, copy_from_scaffold=built.spec.scaffold, input_state=input_state)
        names = TensorNames(  # under steps_per_run > 1, a graph tensor of a variable the loop writes is refused
            named=built.named,
            graph=built.graph,
            loop_variables=built.window.variables - {built.global_step.op.name} if built.window else frozenset(),
        )
        unknown = check_tensor_names(loaded, running, names)  # every unknown name at once, before any hook
        if unknown:
            raise ConfigError(unknown)
        # One clock for every hook; on a cluster other workers move global_step, so it reads instead of counting.
        clock = StepClock(initial_step, reading=cluster is not None, window=built.window)
        for index, hook_config in running:
            ctx = HookContext(
                tf=tf,
                run_dir=directory,
                base_dir=loaded.base_dir,
                tensors=names,
                scaffold=scaffold,
                console=console,
                expected_last_step=last_step,
                where=f"hooks[{index}]",
                on_close=on_close,
                evaluation=built.evaluation,
                evaluations=evaluations,
                task=cluster.label if cluster is not None else None,
                chief=cluster is None or cluster.plan.is_chief,
                clock=clock,
                steps_per_epoch=steps_per_epoch,
                window=built.window,
                model_summaries=built.summaries,
                saving_listeners=current_saving_listeners(),  # Estimator.train(saving_listeners=...)
            )
            try:
                hooks.append(build_hook(hook_config, ctx))
            except (UnknownTensorError, HookConfigError) as err:
                loc = ("hooks", index, *getattr(err, "loc", ()))
                raise ConfigError([loaded.issue(loc, str(err))]) from err
            except PlacedError as err:  # a custom hook's class or function does not import: at its line
                raise ConfigError([loaded.issue(err.loc, err.reason)]) from None
    return _BuiltHooks(hooks=hooks, scaffold=scaffold, on_close=on_close, evaluations=evaluations, clock=clock)


def _hook_label(index: int, hook_config: Any) -> str:
    """``hooks[2] (custom my_hooks:Counter)``: a hook's place and name, for messages."""
    name = hook_config.display_name()
    if name != hook_config.type:
        name = f"{hook_config.type} {name}"
    return f"hooks[{index}] ({name})"


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

    Steps: :func:`prepare` (data, device, graph, hooks: every tensor name is
    resolved before training); create the run directory and check it is
    writable; write the resolved ``config.yaml`` (and ``preprocessing.json``);
    run the monitored session (see
    :func:`hookrun.runner.session.monitored.run_monitored`); write ``summary.json``.
    Re-running with the same run directory resumes from its latest checkpoint.

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
    cluster_plan = resolve_cluster(loaded.config.cluster, task)  # TF_CONFIG or `cluster:`; None: one process
    if cluster_plan is not None and loaded.config.session.steps_per_run > 1:
        raise SetupError(
            f"session.steps_per_run: {loaded.config.session.steps_per_run} does not run on a cluster (TF_CONFIG or "
            "`cluster:`): between-graph replication runs one step per session call; set session.steps_per_run: 1"
        )
    if cluster_plan is not None:
        check_addresses(cluster_plan)  # port in use, unreachable ps: exit 2 before TensorFlow loads
        if cluster_plan.is_ps:
            from hookrun.runner.cluster.servers import serve_ps

            served = serve_ps(cluster_plan, console, verbose)
            return TrainResult(
                run_dir=directory, initial_step=0, final_global_step=0, steps=0, loop_seconds=served,
                end_of_data=False, notes=cluster_plan.notes, task=str(cluster_plan.task),
            )
    if cluster_plan is None or cluster_plan.is_chief:  # other tasks write only their own files beside the chief's
        check_adoptable(directory)
    with contextlib.ExitStack() as held:
        # An existing run directory is locked before TensorFlow is even imported, so a second
        # `hookrun train` on it fails at once; a new one is locked as soon as it is created.
        # On a cluster only the chief locks it (the other workers write only their own files).
        locked = directory.is_dir() or (cluster_plan is not None and not cluster_plan.is_chief)
        if locked and (cluster_plan is None or cluster_plan.is_chief):
            held.enter_context(RunDirLock(directory))
        return _train_locked(
            loaded, directory, console, verbose, held, locked, allow_config_change, trace=trace,
            cluster_plan=cluster_plan,
        )


def _train_locked(
    loaded: LoadedConfig,
    directory: Path,
    console: Console,
    verbose: bool,
    held: contextlib.ExitStack,
    locked: bool,
    allow_config_change: bool = False,
    trace: bool = False,
    cluster_plan: Any = None,
) -> TrainResult:
    """The body of :func:`train`, run while ``held`` holds (or will hold) the run-directory lock."""
    cluster = None
    if cluster_plan is not None:
        import_tensorflow(verbose)  # quietly, before cluster_session imports it
        from hookrun.runner.cluster.session import ClusterRun

        cluster = ClusterRun(cluster_plan)
    # Reading the data, importing TensorFlow and building the graph take seconds: say so (a terminal only;
    # the progress bar's live display starts after it)
    status = console.status("reading the data and building the graph…") if console.is_terminal else None
    with status or contextlib.nullcontext():
        prepared = prepare(loaded, directory, console, verbose, cluster=cluster)
    try:  # on any failure before the session too (a refused config change): the warm start's pinned copy goes
        cluster = prepared.cluster
        chief = cluster is None or cluster.plan.is_chief
        if cluster is not None:
            prepared.notes.extend(cluster.plan.notes)

        # Written only now that everything is checked: a failed validation leaves nothing behind.
        prepare_run_dir(directory)
        if not locked:  # the directory was new: lock it now
            held.enter_context(RunDirLock(directory))
        # TensorFlow's event writers follow symlinks and name their files predictably: refuse planted ones
        check_event_dirs(directory, [
            ("the run", "."),  # the hparams; a model_fn's or custom hook's summaries, as TensorFlow's model_dir
            ("the run's training events", TRAIN_EVENT_DIR),  # checkpoint_saver's graph, whatever the hooks
            *((f"hooks[{index}] ({hook.display_name()})", event_dir)
              for index, hook in enumerate(loaded.config.hooks) if (event_dir := hook.event_dir()) is not None),
        ])
        config_text = self_contained_yaml(loaded)  # paths absolute or relative to the run directory
        saved_config = directory / "config.yaml"
        if chief:  # holding the lock: nothing else writes here now
            clean_temporary_files(directory)  # left by a run killed mid-write
            write_checkpoint_state(directory, prepared.resume)
        if chief and prepared.initial_step > 0 and saved_config.exists():
            change = compare_configs(read_saved_config(saved_config), config_text)
            if change.shape_diff and not allow_config_change:
                raise SetupError(
                    f"{saved_config}: this config changes the graph or data shape of a run at step "
                    f"{prepared.initial_step}; use a new --run-dir, or --allow-config-change to resume anyway:\n"
                    + change.shape_diff
                )
            if change.shape_diff:
                prepared.notes.append("resumed despite a graph/data-shape change (--allow-config-change)")
            if change.other_keys:
                prepared.notes.append("resumed with changed " + ", ".join(change.other_keys))
        record = None
        if chief:  # on a cluster the other workers leave the run's own files to the chief
            atomic_write_text(saved_config, config_text)
            if prepared.preprocessor is not None:  # (none with data.input_fn)
                prepared.preprocessor.save(directory / PREPROCESSING_FILE)
            # summary.json says `running` (with the start time and --set) until the end rewrites it
            record = begin_record(directory, loaded.overrides, resumed=prepared.initial_step > 0)
        # which TensorFlow build (CUDA or CPU-only, CUDA and cuDNN versions) and which devices it found
        console.print(describe_tensorflow(prepared.tf), highlight=False, soft_wrap=True, markup=False)
        for note in prepared.notes:  # before training, not under its table: the device it runs on, the resume
            console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
        prepared.notes_shown = len(prepared.notes)
        try:
            return _train_session(loaded, directory, console, verbose, prepared, record, trace)
        except BaseException as err:
            if record is not None and not record.written:
                record.write_failed(err)
            raise
    finally:
        prepared.close()


def _train_session(
    loaded: LoadedConfig,
    directory: Path,
    console: Console,
    verbose: bool,
    prepared: PreparedRun,
    record: StatusRecord | None,
    trace: bool = False,
) -> TrainResult:
    """The session part of :func:`train`: hooks wrapped, the monitored session run, ``summary.json`` written."""
    tf = prepared.tf
    config = loaded.config
    cluster = prepared.cluster
    chief = cluster is None or cluster.plan.is_chief

    hooks, tracer = prepared.hooks, None
    if trace or config.session.trace:  # off: hooks are not wrapped at all
        from hookrun.runner.session.plan import plan as hook_plan
        from hookrun.runner.session.trace import TRACE_FILE, TraceRecorder

        trace_file = TRACE_FILE if cluster is None else cluster.plan.task_file(TRACE_FILE)
        tracer = TraceRecorder(directory / trace_file, prepared.built.global_step, prepared.clock)
        names = [planned.name for planned in hook_plan(prepared.hook_configs)] + prepared.spec_hook_names
        hooks = tracer.wrap(hooks, names)
    labels = prepared.hook_labels
    if chief:  # hook state beside each checkpoint (hookrun.hooks.state); the chief writes the checkpoints
        from hookrun.hooks.state import HookStates

        states = HookStates(
            prepared.hooks,
            [label.partition(" ")[0] for label in labels],
            prepared.built.global_step,
            lambda: prepared.scaffold.saver,
            directory,
        )
        if states:  # first: load before any after_create_session; last: save once every hook has run
            hooks = [states.loader, *hooks, states.writer]
            labels = ["hook state (load)", *labels, "hook state (save)"]
    config_proto = _session_config(tf, config, prepared.plan)
    session_factory = None
    if cluster is not None:  # TensorFlow's MonitoredSession on the cluster, whatever session.engine says
        config_proto = cluster.configure(config_proto)
        cluster.start(config_proto, console)
        with prepared.built.graph.as_default():
            session_factory = cluster.session_factory(hooks, prepared.scaffold, directory, config_proto)
    completed = False
    try:
        with prepared.built.graph.as_default(), tf_logging_to(console, verbose), writer_thread_errors_deferred():
            if chief:  # TensorBoard's HParams: the config's and --set's values, at the run directory's top
                write_hparams(directory, loaded)
            loop = run_monitored(
                tf,
                prepared.built.train_op,
                hooks,
                prepared.scaffold,
                directory,
                config_proto,
                prepared.initial_step,
                engine=config.session.engine,
                session_factory=session_factory,
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
        if cluster is None and not completed:  # (on a cluster other workers may still be writing)
            clean_temporary_files(directory)  # what a failed write left; the last good checkpoint stays
        if cluster is not None:  # the chief stops the other tasks; a worker tells the chief it stopped
            prepared.notes.extend(cluster.finish(completed))

    if config.data.input_fn is not None and loop.end_of_data and loop.steps == 0 and loop.signal is None:
        raise SetupError(
            f"data.input_fn {config.data.input_fn} produced no element: its dataset ended before the first step "
            "(an empty file, or a filter that keeps nothing)"
        )
    if closed is not None:  # an event file could not be written, though training itself succeeded
        raise TrainingError(describe_write_failure(closed) or f"cannot close the event files: {closed}") from closed
    initial_step = prepared.initial_step
    contributions = [h.hook_result() for h in prepared.hooks if isinstance(h, ContributesResult)]
    if loop.signal is None:  # after a signal, the CLI's "interrupted at step N" says why the run ended early
        for line in (w for c in contributions for w in c.warnings):
            console.print(line, style="yellow", markup=False, highlight=False)
    history = next((c for c in contributions if c.history is not None), None)  # the first hook's that keeps one
    final_step = loop.final_global_step
    if final_step is None:
        final_step = restored_step(tf, directory) if loop.steps == 0 else initial_step + loop.steps
    result = TrainResult(
        run_dir=directory,
        initial_step=initial_step,
        final_global_step=final_step,
        steps=loop.steps,
        loop_seconds=loop.loop_seconds,
        end_of_data=loop.end_of_data,
        history=list(history.history or []) if history is not None else [],
        history_columns=list(history.history_columns) if history is not None else [],
        evaluations=[{"step": step, **values} for step, values in (prepared.evaluations or Evaluations([])).records],
        checkpoint_path=None if cluster is not None and not cluster.plan.is_chief else tf.train.latest_checkpoint(
            str(directory)
        ),
        notes=prepared.notes,
        notes_shown=prepared.notes_shown,
        signal=loop.signal,
        trace_summary=tracer.summary(loop.loop_seconds) if tracer is not None else None,
        task=str(cluster.plan.task) if cluster is not None else None,
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
    summary_file = "summary.json"
    if cluster is not None:
        summary["task"] = result.task
        summary_file = cluster.plan.task_file(summary_file)
    atomic_write_text(directory / summary_file, json.dumps(summary, indent=2) + "\n")
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


def check_graph(loaded: LoadedConfig, run_dir: Path | None = None, verbose: bool = False) -> dict[str, Any]:
    """Build the graph and every hook, resolving every tensor name; no session, nothing written.

    Behind ``hookrun validate CONFIG --build``.

    Returns:
        ``{"named": [...], "trainable_variables": [(name, shape), ...], "device": str, "hooks": int,
        "training_hooks": [name, ...], "training_chief_hooks": [...], "evaluation_hooks": [...]}`` (a
        model_fn's hooks: ``training_hooks`` then ``training_chief_hooks`` run after the config's hooks;
        ``evaluation_hooks`` around each evaluation, listed when the run evaluates).

    Raises:
        ConfigError, SetupError: as :func:`prepare`.
    """
    directory = resolve_run_dir(run_dir_for(loaded, run_dir))
    prepared = prepare(loaded, directory, Console(quiet=True), verbose)
    prepared.close()
    with prepared.built.graph.as_default():
        variables = [(v.op.name, v.shape.as_list()) for v in prepared.tf.compat.v1.trainable_variables()]
    evaluation = prepared.built.evaluation
    return {
        "named": sorted(prepared.built.named),
        "trainable_variables": variables,
        "device": prepared.plan.device,
        "hooks": len(prepared.hooks),
        "training_hooks": [n for n in prepared.spec_hook_names if n.startswith("training_hooks[")],
        "training_chief_hooks": [n for n in prepared.spec_hook_names if n.startswith("training_chief_hooks[")],
        "evaluation_hooks": [
            f"evaluation_hooks[{i}] {type(h).__name__}"
            for i, h in enumerate(evaluation.evaluation_hooks if evaluation is not None else [])
        ],
    }


def inspect_graph(loaded: LoadedConfig, run_dir: Path | None = None, verbose: bool = False) -> Any:
    """Build the graph and every hook as ``train`` would and list what hooks may name; nothing written.

    Behind ``hookrun inspect CONFIG``. The run directory is only read (the latest checkpoint's step,
    the saved preprocessing), never created.

    Args:
        loaded: the config.
        run_dir: overrides the config's run directory (as ``train``'s ``run_dir``).
        verbose: show TensorFlow's INFO logs.

    Returns:
        A :class:`hookrun.runner.graph.tensor_names.GraphInventory`: every nameable tensor (name, dtype,
        shape, op type), the aliases and what each resolves to, the variables.

    Raises:
        ConfigError, SetupError: as :func:`prepare`.
    """
    from hookrun.runner.graph.tensor_names import graph_inventory

    directory = run_dir_for(loaded, run_dir).resolve()
    prepared = prepare(loaded, directory, Console(quiet=True), verbose)
    prepared.close()
    return graph_inventory(prepared.tf, prepared.built.graph, prepared.built.named, prepared.plan.device)
