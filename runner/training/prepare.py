"""Phase 1, prepare: read the data, place the graph, build it and every hook; no session, nothing written.

:func:`prepare` returns a :class:`PreparedRun`: the run's role (:mod:`hookrun.runner.roles`), its placement,
the built graph, the data, the checkpoint it resumes from and the hooks. Everything that depends on a
cluster or on towers is asked of the role.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from hookrun.common.errors import PlacedError
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.loader import ConfigError, LoadedConfig
from hookrun.hooks.context import (
    Evaluations,
    HookConfigError,
    HookContext,
    TensorNames,
    UnknownTensorError,
)
from hookrun.hooks.registry import build_hook
from hookrun.hooks.step_clock import StepClock
from hookrun.runner.data.reader import steps_per_run
from hookrun.runner.data.source import InputSource, open_source
from hookrun.runner.graph.build import BuiltGraph, build_graph
from hookrun.runner.graph.tensor_names import check_tensor_names
from hookrun.runner.live import current_saving_listeners
from hookrun.runner.roles import LocalRole, Placement, Role
from hookrun.runner.run_dir.checkpoints import Resume, find_checkpoint
from hookrun.runner.tf_env import import_tensorflow

if TYPE_CHECKING:
    from hookrun.runner.session.scaffold import Scaffold

PREPROCESSING_FILE = "preprocessing.json"
#: ``max_to_keep`` of the session's Saver when no hook asks for more (``tf.compat.v1.train.Saver``'s default).
DEFAULT_MAX_TO_KEEP = 5


@dataclass
class PreparedHooks:
    """The hook concern of :func:`prepare`: the hooks this process runs and what they share.

    Attributes:
        instances: ``SessionRunHook`` instances: the config's in config order, then a model_fn's
            ``training_hooks`` and, on the chief, ``training_chief_hooks``.
        configs: the ``hooks:`` entries this process runs (all of them in one process), in order.
        labels: per hook of ``instances``, its place and name for messages: ``hooks[2] (custom my_hooks:Counter)``.
        spec_names: the names of a model_fn's ``training_hooks`` and, on the chief, ``training_chief_hooks``
            (the last hooks of ``instances``), as the trace and ``validate --build`` show them:
            ``training_hooks[0] MyHook``, ``training_chief_hooks[0] MyHook``.
        scaffold: the session's :class:`~hookrun.runner.session.scaffold.Scaffold` (its saver, with the
            checkpoint_saver's ``max_to_keep``, is built after every hook's ``begin()``).
        clock: the step clock the hooks share.
        evaluations: the validation results shared by the hooks, or None without an evaluation.
    """

    instances: list[Any]
    configs: list[HookConfig]
    labels: list[str]
    spec_names: list[str]
    scaffold: Scaffold
    clock: StepClock
    evaluations: Evaluations | None = None


@dataclass(kw_only=True)
class PreparedRun:
    """A graph with its hooks, ready for the session (nothing run, nothing written).

    Attributes:
        tf: the ``tensorflow`` module (typed Any: TensorFlow ships no types hookrun could name here).
        role: the run's role: one process or a cluster task (:mod:`hookrun.runner.roles`).
        placement: where the ops went: the device plan (one device or towers), a cluster's device function.
        built: the graph, ``train_op`` and named tensors.
        data: the training and validation input and the preprocessing.
        resume: the checkpoint the run resumes from, found from the run directory's files.
        hooks: the hooks, their configs and labels, the scaffold and the step clock they share.
        on_close: callables to run after the session, on success and failure; :meth:`close` runs them.
        notes: lines for the user.
        notes_shown: how many of ``notes`` (the first) were printed before the session.
    """

    tf: Any
    role: Role
    placement: Placement
    built: BuiltGraph
    data: InputSource
    resume: Resume
    hooks: PreparedHooks
    on_close: list[Callable[[], None]]
    notes: list[str]
    notes_shown: int = 0

    @property
    def initial_step(self) -> int:
        """``global_step`` restored from the run directory (0 if none)."""
        return self.resume.step

    def close(self) -> None:
        """Run every ``on_close`` callable once, in order (later calls do nothing).

        Called after the session, and by :func:`hookrun.runner.trainer.train` when it fails before the
        session (a refused config change, an unwritable run directory), so a warm start's pinned checkpoint
        copy is removed then too.
        """
        pending, self.on_close = self.on_close, []
        for close in pending:
            close()


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


def prepare(
    loaded: LoadedConfig, directory: Path, console: Console, verbose: bool = False, role: Role | None = None
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
        role: the run's role (default: :class:`~hookrun.runner.roles.local.LocalRole`, one process). A
            cluster task's (:class:`~hookrun.runner.roles.cluster_task.ClusterTaskRole`) places the graph
            with ``replica_device_setter``, shards the data and leaves ``chief_only`` hooks out elsewhere.

    Returns:
        The prepared run.

    Raises:
        ConfigError: hooks name unknown tensors (exit 2; one issue per name, at its line, with a
            "did you mean" over the whole graph); ``graph.builder`` does not import, fails or
            returns no scalar loss, or a custom hook's class or function does not import (at its line).
        SetupError: bad data, a missing GPU, a builder or hook that does not import (exit 2).
    """
    role = role or LocalRole()
    config = loaded.config
    # the data: the user's input_fn, or files of a registered format (one streaming pass, before TensorFlow
    # loads; every task of a cluster refuses one where a task would get no rows)
    data = open_source(loaded, [str(task) for task in role.training_tasks])
    notes: list[str] = []

    tf = import_tensorflow(verbose)
    placement = role.placement(tf, config)
    notes.extend(placement.notes)
    resume = find_checkpoint(tf, directory)  # from the files: a lost or stale state file is no fresh start
    initial_step = resume.step
    notes.extend(resume.notes)
    # on a cluster each training task reads its shard: tf.distribute's InputContext, given to a user's input_fn
    # (when it names input_context) and followed by the built-in reader (its files, or rows)
    data.open(directory / PREPROCESSING_FILE, initial_step, notes, role.input_context(tf))
    # (index in hooks:, config) of the hooks this process runs: chief_only ones run on the chief alone.
    running = [(i, h) for i, h in enumerate(config.hooks) if role.runs(h)]
    unpin = _nothing  # removes the warm start's pinned checkpoint, after the session (an on_close)
    try:
        built = build_graph(
            tf,
            config,
            data.train,
            loaded.base_dir,
            placement.plan,
            role.batches_done(initial_step),
            validation=data.validation if any(h.needs_evaluation() for _, h in running) else None,
            label_scale=data.preprocessor.label_scale if data.preprocessor is not None else 1.0,
            device_function=placement.device_function,
            wrap_optimizer=placement.wrap_optimizer,
            # steps_per_run > 1: the named tensors the hooks read; all of them (and global_step's last-step
            # read) when a hook may fetch any tensor (a custom hook)
            carry=None if any(hook.fetches_unknown_tensors() for _, hook in running)
            else {name for _, hook in running for _, name in hook.tensor_names()},
            run_dir=directory,
            # a model_fn's (and input_fn's) `config`: Estimator's RunConfig, from this run and task
            run_info=role.run_info(config, directory, tf, placement),
        )
        if config.graph.warm_start is not None:
            unpin = _warm_start(tf, built.graph, loaded, resume, role, notes)
        # where a resumed run continues in its data: skipped batches (files), a saved iterator state (input_fn)
        input_state, input_notes = data.position(
            tf, built.graph, resume_path=resume.path if initial_step > 0 else None,
            ended_at_data_end=_ended_at_data_end(directory, initial_step), on_cluster=not role.keeps_input_state,
            own_saver=getattr(built.spec.scaffold, "saver", None) is not None,
        )
        notes.extend(input_notes)
    except PlacedError as err:  # graph.builder does not import, fails or returns no scalar loss: at its line
        raise ConfigError([loaded.issue(err.loc, err.reason)]) from None
    on_close: list[Callable[[], None]] = []
    try:
        hooks = _build_hooks(
            loaded,
            running,
            built,
            tf=tf,
            directory=directory,
            console=console,
            role=role,
            on_close=on_close,
            initial_step=initial_step,
            last_step=expected_last_step(loaded, data.num_rows, initial_step),
            steps_per_epoch=(data.num_rows / config.data.batch_size
                             if not role.shares_global_step and data.num_rows else None),
            input_state=input_state,
        )
    except BaseException:
        unpin()
        raise
    return PreparedRun(
        tf=tf,
        role=role,
        placement=placement,
        built=built,
        data=data,
        resume=resume,
        hooks=hooks,
        on_close=[*on_close, unpin],
        notes=notes,
    )


# ---------------------------------------------------------------- the graph's extras: warm start, input state


def _nothing() -> None:
    """Nothing to undo (no checkpoint pinned)."""


def _warm_start(
    tf: Any, graph: Any, loaded: LoadedConfig, resume: Resume, role: Role, notes: list[str]
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
    if not role.is_chief:
        return _nothing
    from hookrun.runner.graph.warm_start import warm_start

    report = warm_start(tf, graph, loaded.config.graph.warm_start, loaded.base_dir)
    notes.append(report.note())
    return report.close


def _ended_at_data_end(directory: Path, step: int) -> bool:
    """The run directory's last session ended at the end of its data at global step ``step`` (``summary.json``)."""
    from hookrun.runner.run_dir.status import read_summary

    summary = read_summary(directory / "summary.json") if step > 0 else None
    return bool(summary and summary.get("end_of_data") and summary.get("final_global_step") == step)


# ---------------------------------------------------------------- the hooks


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


def _build_hooks(
    loaded: LoadedConfig,
    running: list[tuple[int, HookConfig]],
    built: BuiltGraph,
    *,
    tf: Any,
    directory: Path,
    console: Console,
    role: Role,
    on_close: list[Callable[[], None]],
    initial_step: int,
    last_step: int | None,
    steps_per_epoch: float | None = None,
    input_state: Any = None,
) -> PreparedHooks:
    """Build the Scaffold and every hook this process runs, resolving every tensor name first.

    A model_fn's ``EstimatorSpec.training_hooks`` run after the config's hooks, in their order (as Estimator
    appended them to its own), then its ``training_chief_hooks`` on the chief only (MonitoredTrainingSession's
    ``chief_only_hooks`` come after its hooks); they have no config entry, so the trace and messages name them
    by field and class. ``on_close`` is filled with what the hooks ask to run after the session.

    Raises:
        ConfigError: a hook names unknown tensors (all of them at once), its settings do not fit the
            graph, or a custom hook's class or function does not import (at its line).
    """
    evaluations = Evaluations(names=list(built.evaluation.values)) if built.evaluation is not None else None
    hooks: list[Any] = []
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
        # One clock for every hook; where other processes move global_step, it reads instead of counting.
        clock = StepClock(initial_step, reading=role.shares_global_step, window=built.window)
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
                task=role.task_label,
                chief=role.is_chief,
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
    spec_hooks, spec_names = spec_training_hooks(built.spec, chief=role.is_chief)
    return PreparedHooks(
        instances=hooks + spec_hooks,
        configs=[h for _, h in running],
        labels=[_hook_label(index, hook_config) for index, hook_config in running]
        + [f"{name} (from graph.builder's EstimatorSpec)" for name in spec_names],
        spec_names=spec_names,
        scaffold=scaffold,
        clock=clock,
        evaluations=evaluations,
    )


def _hook_label(index: int, hook_config: HookConfig) -> str:
    """``hooks[2] (custom my_hooks:Counter)``: a hook's place and name, for messages."""
    name = hook_config.display_name()
    if name != hook_config.type:
        name = f"{hook_config.type} {name}"
    return f"hooks[{index}] ({name})"
