"""The interface between the runner and the hooks, both ways. Imports no TensorFlow.

To a hook (when it is built): :class:`HookContext`, with :class:`TensorNames`, the shared
:class:`Evaluations` and the graph's :class:`EvaluationGraph`.

From a hook to the runner:

- before the graph is built, what it needs, from its config (TF-free, see
  :class:`hookrun.config_schemas.hook_base.HookConfig`): ``needs_evaluation()``,
  ``checkpoints_to_keep()``, ``last_step(initial_step)``, ``display_name()``;
- after the run, what it contributes to the ``TrainResult`` and ``summary.json``: a built hook that has
  ``hook_result() -> HookResult`` (:class:`ContributesResult`);
- a failure the user must see as is (exit 1, no "where" added): :class:`HookFailure`.

The runner calls these and knows no hook by its type or class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from hookrun.common.files import task_file_name
from hookrun.config_schemas.hook_base import LIFECYCLE_METHODS
from hookrun.hooks import tf_internals
from hookrun.hooks.step_clock import HOOKRUN_SCOPE as HOOKRUN_SCOPE  # re-exported for the runner and hooks
from hookrun.hooks.step_clock import StepClock
from hookrun.hooks.window import RunWindow


class UnknownTensorError(LookupError):
    """A hook names a tensor the graph does not have."""


class UnfedTensorError(UnknownTensorError):
    """A hook names a tensor of the builder's first call, which never runs under ``session.steps_per_run`` > 1."""


class HookConfigError(ValueError):
    """A hook's settings do not fit the built graph (the runner reports it at the hook's line, exit 2)."""


class HookFailure(RuntimeError):
    """A hook stopped training with a complete, user-facing message (exit 1; reported as is)."""


@dataclass(frozen=True)
class BestCheckpoint:
    """The best evaluation a hook kept track of (``early_stopping``), and the checkpoint it saved of it.

    Attributes:
        step: the global step of the best evaluation.
        monitor: the validation value watched, e.g. ``val_loss``.
        value: its best value.
        path: the checkpoint prefix kept for it (``<run_dir>/best/model.ckpt-<step>``), or None when none
            was kept (``keep_best: false``).
    """

    step: int
    monitor: str
    value: float
    path: str | None = None


@dataclass(frozen=True)
class HookResult:
    """What one hook hands to the run's result.

    Attributes:
        history: rows for ``TrainResult.history`` (whole run, resumed rows included), or None.
        history_columns: column names of ``history``.
        summary: keys to add to ``summary.json`` (JSON values).
        best: the best evaluation and its kept checkpoint, or None.
        warnings: whole lines (``warning: ...``) the runner prints once the session has closed, unless a
            signal stopped the run: then the CLI's ``interrupted at step N`` already says why it ended.
    """

    history: list[dict[str, Any]] | None = None
    history_columns: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    best: BestCheckpoint | None = None
    warnings: list[str] = field(default_factory=list)


@runtime_checkable
class ContributesResult(Protocol):
    """A built hook that contributes to the run's result; the runner asks it after the session closed."""

    def hook_result(self) -> HookResult:
        """The hook's contribution (called once, after every hook's ``end``)."""
        ...


class EvaluationGraph(Protocol):
    """The graph's evaluation part as hooks see it (the runner's ``hookrun.runner.graph.build.EvalGraph``).

    Running ``reset_op``, then ``update_op`` ``num_batches`` times, then fetching ``values`` evaluates
    the current weights on every validation row once.
    """

    reset_op: Any
    update_op: Any
    num_batches: int
    values: Mapping[str, Any]


#: Name prefix of the placeholders the builder's variable-creating call runs on under ``session.steps_per_run`` > 1.
UNFED_INPUT = "hookrun_unfed_input"


def walk_ops(ops: Iterable[Any]) -> Iterator[Any]:
    """Each op of ``ops`` and every op they depend on (data and control inputs), once each, depth first.

    Iterative, so a deep graph does not recurse; a cycle (a ``tf.while_loop``'s ``NextIteration``) ends where
    an op was already seen. Stop iterating to stop walking.
    """
    seen: set[int] = set()
    pending = list(ops)
    while pending:
        op = pending.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        yield op
        pending.extend(t.op for t in op.inputs)
        pending.extend(op.control_inputs)


def _computed_from_unfed_input(tensor: Any) -> bool:
    """True if ``tensor`` depends on a never-fed input placeholder (``session.steps_per_run`` > 1's first call)."""
    return any(op.type == "Placeholder" and UNFED_INPUT in op.name for op in walk_ops([tensor.op]))


#: Types of the ops that hold a variable (resource and reference variables).
VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})


def reads_variable(tensor: Any, variables: frozenset[str]) -> str | None:
    """The op name of a variable of ``variables`` that ``tensor`` is computed from, or None."""
    if not variables:
        return None
    return next(
        (str(op.name) for op in walk_ops([tensor.op]) if op.type in VARIABLE_OPS and op.name in variables), None
    )
    seen: set[int] = set()
    pending = [tensor.op]
    while pending:
        op = pending.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.type in VARIABLE_OPS and op.name in variables:
            return str(op.name)
        pending.extend(t.op for t in op.inputs)
        pending.extend(op.control_inputs)
    return None


@dataclass
class TensorNames:
    """Resolve hook tensor names: the spec's names first, then graph tensor names.

    Attributes:
        named: spec names -> tensors (``loss``, ``global_step``, ``predictions``, metric names).
        graph: the ``tf.Graph`` for names like ``hidden_0/kernel:0``.
        loop_variables: under ``session.steps_per_run`` > 1, the op names of the variables every step of
            the loop writes, ``global_step`` aside (``RunWindow.variables``): a graph tensor read from one
            is refused (fetched beside the loop it gives the window's first step). Empty with N = 1.
    """

    named: Mapping[str, Any]
    graph: Any
    loop_variables: frozenset[str] = frozenset()
    _unfed: bool | None = field(default=None, repr=False, compare=False)

    def resolve(self, name: str) -> Any:
        """Return the tensor called ``name``.

        Args:
            name: a spec name (``loss``), a tensor name (``hidden_0/kernel:0``) or an op
                name with one output (``hidden_0/kernel``).

        Raises:
            UnknownTensorError: no such tensor; the message lists the spec names
                and a few graph tensor names.
            UnfedTensorError: under ``session.steps_per_run`` > 1, a tensor of the builder's first call, or
                one read from a variable the loop writes (see docs/engine.md, "What a hook's fetches and
                feeds give").
        """
        if name in self.named:
            return self.named[name]
        tensor = None
        try:
            if ":" in name:
                tensor = self.graph.get_tensor_by_name(name)
            else:
                op = self.graph.get_operation_by_name(name)
                if len(op.outputs) == 1:
                    tensor = op.outputs[0]
        except (KeyError, ValueError):
            pass
        if tensor is None:
            raise UnknownTensorError(
                f"unknown tensor {name!r}; named tensors: {', '.join(sorted(self.named))} "
                "(or a graph tensor name such as `hidden_0/kernel:0`; `hookrun inspect CONFIG` lists them all)"
            )
        if self._has_unfed_input() and _computed_from_unfed_input(tensor):
            raise UnfedTensorError(
                f"tensor {name!r} is computed by the builder's first call, which only creates the variables under "
                "session.steps_per_run > 1 (each step's tensors live inside the loop); name one of the named "
                f"tensors ({', '.join(sorted(self.named))}: their values at a window's last step), a variable, "
                "or set session.steps_per_run: 1"
            )
        readable = self.readable(tensor)
        if self.loop_variables and "global_step" in self.named and self._reads_global_step(readable):
            return self.named["global_step"]  # as the alias: read beside the loop it would give the first step
        variable = reads_variable(readable, self.loop_variables)
        if variable is not None:
            raise UnfedTensorError(
                f"tensor {name!r} reads variable {variable!r}, which every step of the session.steps_per_run loop "
                "writes: fetched beside the loop it would give the window's first step, not its last; name one of "
                f"the named tensors ({', '.join(sorted(self.named))}: their values at a window's last step), or set "
                "session.steps_per_run: 1"
            )
        return readable

    def _reads_global_step(self, tensor: Any) -> bool:
        """True if ``tensor`` is a plain read of ``global_step`` (``global_step:0``, its ``Read/ReadVariableOp``)."""
        steps = self.graph.get_collection("global_step")  # tf.compat.v1.GraphKeys.GLOBAL_STEP
        if not steps or tensor.op.type not in ("ReadVariableOp", "Identity") or not tensor.op.inputs:
            return False
        return bool(tensor.op.inputs[0].op is steps[0].op)

    def _has_unfed_input(self) -> bool:
        """True if the graph has the never-fed input placeholders of ``session.steps_per_run`` > 1 (looked up once)."""
        if self._unfed is None:
            self._unfed = any(op.name.startswith(UNFED_INPUT) for op in self.graph.get_operations())
        return self._unfed

    def readable(self, tensor: Any) -> Any:
        """The tensor a session can fetch for ``tensor``: a resource variable's value instead of its handle.

        A resource variable's name (``global_step:0``, ``hidden_0/kernel``) is the output of its
        ``VarHandleOp``, a ``resource`` handle that ``Session.run`` cannot turn into a value. The
        variable's own read, ``<name>/Read/ReadVariableOp:0`` (what fetching the variable object
        gives), is returned instead (a new ``ReadVariableOp`` for a variable in no collection). Any
        other tensor is returned unchanged.

        Args:
            tensor: a tensor of :attr:`graph`.

        Returns:
            The tensor to fetch.
        """
        if tensor.op.type != "VarHandleOp":
            return tensor
        with self.graph.as_default():
            import tensorflow as tf  # only reached with a built graph: TensorFlow is loaded

            v1 = tf.compat.v1
            for variable in v1.global_variables() + v1.local_variables():
                if getattr(variable, "handle", None) is not None and variable.handle.name == tensor.name:
                    element = tf_internals.graph_element(variable)  # the variable's Read/ReadVariableOp:0
                    return element if element is not None else variable.value()
            # A variable in no collection: read the handle with a new op, as the variable would.
            return tf.raw_ops.ReadVariableOp(resource=tensor, dtype=tensor.op.get_attr("dtype"))


@dataclass
class Evaluations:
    """Validation results, shared by the ``evaluation`` hook (which publishes) and the hooks that read them.

    The runner creates one per run when the graph has an evaluation part and hands it to every
    hook through :attr:`HookContext.evaluations`; ``history_saver`` adds its ``names`` as
    columns, ``early_stopping`` watches one of them.

    Attributes:
        names: result names in column order: ``val_loss``, then ``val_<metric>`` (known before training).
        records: ``(global_step, {name: value})`` per evaluation of this process, in order.
    """

    names: list[str]
    records: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    _listeners: list[Callable[[int, dict[str, float]], None]] = field(default_factory=list, repr=False)

    @property
    def latest(self) -> dict[str, float]:
        """The values of the latest evaluation (empty before the first)."""
        return dict(self.records[-1][1]) if self.records else {}

    @property
    def latest_step(self) -> int | None:
        """The global step of the latest evaluation, or None."""
        return self.records[-1][0] if self.records else None

    def publish(self, step: int, values: dict[str, float]) -> None:
        """Record an evaluation at global step ``step`` and tell every listener."""
        self.records.append((step, dict(values)))
        for listener in list(self._listeners):
            listener(step, dict(values))

    def subscribe(self, listener: Callable[[int, dict[str, float]], None]) -> None:
        """Call ``listener(step, values)`` after each later :meth:`publish`."""
        self._listeners.append(listener)

    def latest_in(self, after: int, upto: int) -> dict[str, float]:
        """The values of the latest evaluation at a global step in ``(after, upto]``, or empty."""
        for step, values in reversed(self.records):
            if after < step <= upto:
                return dict(values)
        return {}


@dataclass
class HookContext:
    """Everything a hook builder may need, built once by the runner.

    Attributes:
        tf: the ``tensorflow`` module (already imported).
        run_dir: the run directory (absolute); relative hook paths resolve here.
        base_dir: the config file's directory; ``module:attr`` paths resolve here first.
        tensors: name resolution for hook parameters.
        scaffold: the ``tf.compat.v1.train.Scaffold`` the session will use (its saver restores).
        console: the ``rich.console.Console`` all output goes through.
        expected_last_step: global step at which the run should end, from ``stop_at_step``
            or the data (``rows x epochs / batch_size``); None if unknown (steps).
        where: the hook's position for messages, e.g. ``hooks[3]``.
        on_close: the runner appends callables here to run after the session closes,
            on success and on failure alike (stop live displays, flush files).
        evaluation: the graph's evaluation part (:class:`EvaluationGraph`), or None
            when the run has no validation data or no ``evaluation`` hook.
        evaluations: the shared validation results (:class:`Evaluations`), or None likewise.
        task: on a cluster, this task's label (``worker1``; prefixes its output), else None. Other
            workers move ``global_step`` too, so hooks that count steps read it on a cluster.
        chief: this task writes the run's own files (always, without a cluster); see :meth:`task_file`.
        steps_per_epoch: global steps one pass over the training rows takes (``rows / batch_size``; batches
            run across epoch boundaries, so a fraction in general), or None on a cluster (where the
            workers share ``global_step``).
        clock: the ``global_step`` clock the run's step-driven hooks share (one per run; see
            :class:`~hookrun.hooks.step_clock.StepClock`); it starts at the restored ``global_step``.
        window: under ``session.steps_per_run: N`` (N > 1), the fused train op's tensors
            (:class:`~hookrun.hooks.window.RunWindow`: the steps each run took, the ``global_step`` after
            it, the window's sums, the last step's values); None with one step per run. Each
            ``before_run``/``after_run`` then brackets a window of up to N steps, and the tensors a hook
            asks for are the values at the window's last step (as TensorFlow's ``SessionRunArgs`` under
            ``iterations_per_loop``); :attr:`tensors` resolves the named tensors to those.
        model_summaries: the summary ops the builder's ``train`` call made (its ``SUMMARIES`` collection:
            ``tf.compat.v1.summary.scalar`` in a model_fn), which ``summary_saver`` writes as Estimator did.
        saving_listeners: ``CheckpointSaverListener`` objects every ``checkpoint_saver`` also calls, after its
            finite-weights guard (``hookrun.estimator``'s ``Estimator.train(saving_listeners=...)``).
    """

    tf: Any
    run_dir: Path
    base_dir: Path
    tensors: TensorNames
    scaffold: Any
    console: Any
    expected_last_step: int | None = None
    where: str = "hooks[?]"
    on_close: list[Callable[[], None]] = field(default_factory=list)
    evaluation: EvaluationGraph | None = None
    evaluations: Evaluations | None = None
    task: str | None = None
    chief: bool = True
    clock: StepClock = field(default_factory=StepClock)
    steps_per_epoch: float | None = None
    window: RunWindow | None = None
    model_summaries: list[Any] = field(default_factory=list)
    saving_listeners: tuple[Any, ...] = ()

    @property
    def steps_per_run(self) -> int:
        """N: the most training steps one session call runs (``session.steps_per_run``; 1 without a window)."""
        return 1 if self.window is None else int(self.window.steps_per_run)

    def task_file(self, name: str) -> str:
        """A file name in the run directory for this task: ``name`` on the chief, ``history-worker1.csv`` elsewhere."""
        return task_file_name(name, None if self.chief else self.task)

    def resolve_dir(self, relative: str | None) -> Path:
        """``relative`` under the run directory (None -> the run directory itself)."""
        if relative is None:
            return self.run_dir
        return (self.run_dir / relative).resolve()


def missing_methods(obj: Any) -> list[str]:
    """The ``SessionRunHook`` methods ``obj`` (a class or an instance) lacks (or has uncallable), in order.

    ``MonitoredSession`` checks no type: it calls ``begin``, ``after_create_session``,
    ``before_run``, ``after_run`` and ``end`` on each hook, so any object with the five is a hook.
    The one check for the config's ``custom`` hooks and a model_fn's ``EstimatorSpec`` hook lists.
    """
    return [m for m in LIFECYCLE_METHODS if not callable(getattr(obj, m, None))]
