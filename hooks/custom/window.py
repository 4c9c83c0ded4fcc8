"""A custom hook under ``session.steps_per_run: N`` (N > 1): what its fetches and feeds give, or a refusal.

Under N > 1 one session call runs a window of up to N training steps inside a ``while_loop``
(:mod:`hookrun.runner.graph.fused`); the builder's first call, whose tensors (``loss:0``,
``features:0``, ...) are the ones a hook finds in the graph, only creates the variables and never
runs. :class:`WindowedHook` wraps every custom hook there and applies the one rule of
``docs/engine.md`` ("What a hook's fetches and feeds give") to each name the hook fetches or feeds:
it gives what ``MonitoredTrainingSession`` at N = 1 gives at the window's last step, or refuses with
a :class:`WindowRefusal` naming the hook, the tensor and the fix (``session.steps_per_run: 1``):

- a named tensor of the step (``loss``, a metric, ``predictions``, ``learning_rate``), by object or by
  graph name (``loss:0``): the loop's carried value at the window's last step;
- ``global_step`` (the variable, its reads, ``training_util``'s global-step read tensor): its value as
  the window's last step read it, before that step's update (carried by the loop);
- any other tensor or op computed from the step's input (``logits``, ``features:0``, the first call's
  train op): refused at the hook's first ``before_run`` (the loop does not carry it);
- any other tensor or op reading a variable the loop writes (a kernel, a slot, a tensor derived from
  ``global_step``): refused likewise (in the same call it would read the window's *first* step);
- a feed to a tensor of the step's input or of those variables: refused (each step of the loop reads
  its own batch and its own variable reads, so the feed would change nothing); a feed to a tensor the
  loop reads from outside (a placeholder the builder's graph captures) applies to every step of the
  window, and a feed to the hook's own tensors is passed on;
- anything else (the hook's own variables and ops, constants): passed on as is;
- ``session.run`` on ``run_context.session`` or in ``after_create_session``/``end``: a tensor computed
  from the step's input, or the loop itself, is refused at that moment (naming the hook and method,
  never TensorFlow's "must feed a value for placeholder tensor 'hookrun_unfed_input'"); variables read
  their current value, as at N = 1. TensorFlow's ``FinalOpsHook`` is checked in ``begin``: its
  ``final_ops`` run in ``end``, so a refusal comes before the first step.

The results keep the structure of the hook's own request, so the hook's ``after_run`` sees exactly
the types it sees at N = 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookrun.hooks.context import UNFED_INPUT, VARIABLE_OPS, HookFailure, walk_ops
from hookrun.hooks.window import RunWindow

#: The fix every refusal names.
FIX = "set session.steps_per_run: 1 (docs/engine.md, \"What a hook's fetches and feeds give\")"

#: The collection ``training_util._get_or_create_global_step_read`` keeps its tensor in (TensorFlow's key).
_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


class WindowRefusal(HookFailure):
    """A custom hook asks for what a window of steps cannot give (see the module docstring).

    Attributes:
        exit_code: 2 when refused before the first step (the config cannot run as written), else 1.
    """

    def __init__(self, message: str, before_first_step: bool) -> None:
        super().__init__(message)
        self.exit_code = 2 if before_first_step else 1


class _Kind:
    """What one op depends on: the step's input, a variable the loop writes, the loop itself."""

    __slots__ = ("input", "loop", "variable")

    def __init__(self, input_: bool = False, variable: str | None = None, loop: bool = False) -> None:
        self.input = input_
        self.variable = variable
        self.loop = loop


class WindowFetches:
    """The rule applied to fetches and feeds, with the graph walks cached (the graph is finalized).

    Args:
        tf: the ``tensorflow`` module.
        graph: the training graph.
        window: the fused loop's :class:`RunWindow`.
    """

    def __init__(self, tf: Any, graph: Any, window: RunWindow) -> None:
        self._tf = tf
        self._graph = graph
        self._window = window
        self._first = {id(tensor): name for name, tensor in window.first.items()}
        global_step = tf.compat.v1.train.get_global_step(graph)
        self._global_step_op = None if global_step is None else global_step.op
        self._variables = window.variables
        self._kinds: dict[int, _Kind] = {}
        self._loop_ops: set[int] | None = None
        self._loop_inputs: set[int] | None = None
        self._leaves: dict[Any, tuple[Any, str | None]] = {}

    # -- graph walks ---------------------------------------------------------------------------

    def _loop(self) -> set[int]:
        """Ids of the training loop's ``While`` ops; notes what the loop reads from outside (made once)."""
        if self._loop_ops is None:
            whiles = [op for op in self._ancestors(self._window.steps.op).values()
                      if op.type in ("While", "StatelessWhile")]
            inputs: dict[int, Any] = {}
            for op in whiles:
                inputs.update(self._ancestors_excluding(op))
            self._loop_ops = {id(op) for op in whiles}
            self._loop_inputs = set(inputs)
        return self._loop_ops

    @staticmethod
    def _ancestors(op: Any) -> dict[int, Any]:
        """``op`` and every op it depends on (data and control inputs), by id."""
        return {id(o): o for o in walk_ops([op])}

    @staticmethod
    def _ancestors_excluding(op: Any) -> dict[int, Any]:
        """Every op ``op`` depends on, ``op`` itself left out (for the loop: what it reads from outside)."""
        return {id(o): o for o in walk_ops([t.op for t in op.inputs] + list(op.control_inputs))}

    def _reads_loop_input(self, op: Any) -> bool:
        """True if the loop's call reads ``op`` from outside (a feed to it reaches every step)."""
        self._loop()
        assert self._loop_inputs is not None
        return id(op) in self._loop_inputs

    def kind(self, op: Any) -> _Kind:
        """What ``op`` depends on (memoized, iterative: a deep graph does not recurse)."""
        loop = self._loop()
        kinds = self._kinds
        stack: list[tuple[Any, bool]] = [(op, False)]
        while stack:
            current, expanded = stack.pop()
            if id(current) in kinds:
                continue
            parents = [t.op for t in current.inputs] + list(current.control_inputs)
            if not expanded:
                stack.append((current, True))
                stack.extend((p, False) for p in parents if id(p) not in kinds)
                continue
            made = _Kind(
                input_=current.type == "Placeholder" and current.name.startswith(UNFED_INPUT),
                variable=current.name if current.type in VARIABLE_OPS and current.name in self._variables else None,
                loop=id(current) in loop,
            )
            for parent in parents:
                seen = kinds.get(id(parent))
                if seen is None:
                    continue
                made.input = made.input or seen.input
                made.loop = made.loop or seen.loop
                made.variable = made.variable or seen.variable
            kinds[id(current)] = made
        return kinds[id(op)]

    def _global_step_read(self, tensor: Any) -> bool:
        """True if ``tensor`` is ``global_step``'s value: a read of it, an identity of one, TF's read tensor."""
        if self._global_step_op is None:
            return False
        if any(tensor is t for t in self._graph.get_collection(_GLOBAL_STEP_READ_KEY)):
            return True
        while tensor.op.type == "Identity":
            tensor = tensor.op.inputs[0]
        if tensor.op is self._global_step_op and tensor.op.type != "VarHandleOp":
            return True  # a reference variable's output
        return tensor.op.type == "ReadVariableOp" and tensor.op.inputs[0].op is self._global_step_op

    # -- the rule --------------------------------------------------------------------------------

    def _element(self, fetch: Any) -> Any:
        tf = self._tf
        if isinstance(fetch, (tf.Tensor, tf.Operation)):
            return fetch
        try:
            return self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except (TypeError, ValueError, KeyError):
            return None  # not a graph element: Session.run raises its own error for it

    def in_window(self, fetch: Any) -> tuple[Any, str | None]:
        """``(replacement, None)`` for a leaf of a ``before_run`` fetch, or ``(None, reason)`` to refuse it."""
        key = fetch if isinstance(fetch, str) else id(fetch)
        done = self._leaves.get(key)
        if done is not None:
            return done
        element = self._element(fetch)
        result: tuple[Any, str | None]
        if element is None:
            result = (fetch, None)
        elif isinstance(element, self._tf.Operation):
            kind = self.kind(element)
            if kind.input:
                result = (None, "an op of the training step, which runs only inside the loop")
            elif kind.variable:
                result = (None, f"an op on variable {kind.variable!r}, which every step of the loop writes")
            else:
                result = (fetch, None)
        else:
            name = self._first.get(id(element))
            if name is not None:
                result = (self._window.last[name], None)
            elif self._global_step_read(element):
                if self._window.step_global_step is None:
                    result = (None, "global_step, whose last-step value this loop does not carry")
                else:
                    result = (self._window.step_global_step, None)
            else:
                kind = self.kind(element.op)
                if kind.input:
                    result = (None, (
                        "computed inside the training step, and the loop carries only the named tensors "
                        f"({', '.join(sorted(self._window.last)) or 'none'})"))
                elif kind.variable:
                    result = (None, (
                        f"it reads variable {kind.variable!r}, which every step of the loop writes (fetched beside "
                        "the loop it would give the window's first step); only global_step and the named "
                        "tensors are carried"))
                else:
                    result = (fetch, None)
        if not isinstance(fetch, str) and not isinstance(fetch, (self._tf.Tensor, self._tf.Operation)):
            return result  # a variable or other object: not cached by id
        self._leaves[key] = result
        return result

    def outside_window(self, fetch: Any) -> str | None:
        """None if ``session.run`` may run this leaf outside a window, else why not."""
        element = self._element(fetch)
        if element is None:
            return None
        kind = self.kind(element if isinstance(element, self._tf.Operation) else element.op)
        if kind.loop:
            return f"it runs the training loop ({self._window.steps_per_run} more training steps)"
        if kind.input:
            return "it is computed inside the training step, which runs only inside the loop"
        return None

    def feed(self, key: Any) -> str | None:
        """None if a feed to ``key`` takes effect for every step of the window, or reaches no step; else why not."""
        element = self._element(key)
        if element is None or isinstance(element, self._tf.Operation):
            return None
        if self._reads_loop_input(element.op):
            return None  # the loop reads it from outside: the fed value holds for every step
        kind = self.kind(element.op)
        if kind.input:
            return ("each step of the loop reads its own batch and computes its own tensors, so the feed would "
                    "change nothing")
        if kind.variable:
            return f"each step of the loop reads variable {kind.variable!r} itself, so the feed would change nothing"
        return None


def _map_structure(fetches: Any, leaf: Any) -> Any:
    """``fetches`` with each leaf replaced by ``leaf(x)``; the same object when nothing changed."""
    if isinstance(fetches, (list, tuple)):
        items = [_map_structure(item, leaf) for item in fetches]
        if all(new is old for new, old in zip(items, fetches, strict=True)):
            return fetches
        if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):
            return type(fetches)(*items)
        return type(fetches)(items)
    if isinstance(fetches, Mapping):
        pairs = [(name, _map_structure(item, leaf)) for name, item in fetches.items()]
        if all(new is fetches[name] for name, new in pairs):
            return fetches
        return type(fetches)(pairs)
    return leaf(fetches)


def _leaves(fetches: Any) -> list[Any]:
    found: list[Any] = []
    _map_structure(fetches, lambda x: found.append(x) or x)
    return found


def _shown(fetch: Any) -> str:
    if isinstance(fetch, str):
        return fetch
    return str(getattr(fetch, "name", fetch))


def _session_class() -> type:
    """:class:`_Session`, made once: a ``SessionInterface`` (``Saver.save`` refuses anything else)."""
    global _SESSION_CLASS
    if _SESSION_CLASS is None:
        from hookrun.hooks.tf_internals import session_interface

        _SESSION_CLASS = type("_Session", (_Session, session_interface()), {})
    return _SESSION_CLASS


_SESSION_CLASS: type | None = None


class _Session:
    """A session handed to a custom hook: ``run`` refuses what a window cannot compute, the rest is the session's.

    Made through :func:`_session_class`, which adds ``tf.compat.v1``'s ``SessionInterface`` as a base.
    """

    def __init__(self, session: Any, hook: WindowedHook, method: str) -> None:
        self._session = session
        self._hook = hook
        self._method = method

    @property
    def graph(self) -> Any:
        """The session's graph."""
        return self._session.graph

    @property
    def sess_str(self) -> Any:
        """The session's target."""
        return self._session.sess_str

    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> Any:
        """The session's own (no check: partial runs are outside the rule)."""
        return self._session.partial_run_setup(fetches, feeds)

    def partial_run(self, handle: Any, fetches: Any, feed_dict: Any = None) -> Any:
        """The session's own."""
        return self._session.partial_run(handle, fetches, feed_dict)

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        """``Session.run``, after checking each fetched leaf (see :class:`WindowedHook`).

        Raises:
            WindowRefusal: a leaf is computed inside the training step, or runs the loop (exit 1).
        """
        rule = self._hook.rule()
        for leaf in _leaves(fetches):
            reason = rule.outside_window(leaf)
            if reason is not None:
                raise self._hook.refusal(self._method, "runs", leaf, reason, before_first_step=not self._hook.started)
        return self._session.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class _RunContext:
    """A ``SessionRunContext`` with the checking session; ``request_stop`` reaches the real context."""

    def __init__(self, context: Any, session: _Session) -> None:
        self._context = context
        self.session = session

    @property
    def original_args(self) -> Any:
        return self._context.original_args

    @property
    def stop_requested(self) -> bool:
        return self._context.stop_requested

    def request_stop(self) -> None:
        self._context.request_stop()


class WindowedHook:
    """A custom hook under ``session.steps_per_run`` > 1, its fetches and feeds under the rule (module docstring).

    Every lifecycle call is forwarded in order; ``before_run``'s request is rewritten leaf by leaf (the
    same structure, so ``after_run`` gets the types it gets at N = 1); other attributes
    (``state_dict``, ``hook_result``, ...) are the hook's own.

    Args:
        hook: the user's hook (any object with the five ``SessionRunHook`` methods).
        window: the fused loop's :class:`RunWindow`.
        label: the hook in messages, e.g. ``hooks[0] (custom my_hooks:LossThresholdHook)``.

    Raises:
        WindowRefusal: from ``begin`` (a ``FinalOpsHook``'s ``final_ops``) or the first ``before_run``
            (exit 2, before any step), or from a ``session.run`` the hook makes (exit 1).
    """

    def __init__(self, hook: Any, window: RunWindow, label: str) -> None:
        self.hook = hook
        self._window = window
        self._label = label
        self._rule: WindowFetches | None = None
        self.started = False  # a window has run: later refusals are runtime errors (exit 1)
        self._last_request: Any = None
        self._last_translated: Any = None

    def __getattr__(self, name: str) -> Any:
        if name == "hook":  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.hook, name)

    def rule(self) -> WindowFetches:
        """The rule on the current default graph (made on first use)."""
        if self._rule is None:
            import tensorflow as tf

            self._rule = WindowFetches(tf, tf.compat.v1.get_default_graph(), self._window)
        return self._rule

    def refusal(self, method: str, verb: str, fetch: Any, reason: str, *, before_first_step: bool) -> WindowRefusal:
        """The error naming this hook, the method, the tensor, why, and the fix."""
        can = "cannot apply" if verb == "feeds" else "cannot give"
        return WindowRefusal(
            f"{self._label}.{method}() {verb} {_shown(fetch)!r}, which session.steps_per_run: "
            f"{self._window.steps_per_run} {can}: {reason}; {FIX}",
            before_first_step,
        )

    def begin(self) -> None:
        """The hook's ``begin``; then TensorFlow's ``FinalOpsHook``'s ``final_ops`` are checked."""
        self.hook.begin()
        import tensorflow as tf

        if isinstance(self.hook, tf.compat.v1.train.FinalOpsHook):
            rule = self.rule()
            for leaf in _leaves(getattr(self.hook, "_final_ops", None)):
                reason = rule.outside_window(leaf)
                if reason is not None:
                    raise self.refusal("end", "runs final_ops", leaf, reason, before_first_step=True)

    def after_create_session(self, session: Any, coord: Any) -> None:
        """The hook's ``after_create_session``, with the checking session."""
        self.hook.after_create_session(self._checked(session, "after_create_session"), coord)

    def before_run(self, run_context: Any) -> Any:
        """The hook's request, each fetch and feed under the rule.

        Raises:
            WindowRefusal: a fetch or feed the window cannot give (exit 2 before the first window).
        """
        request = self.hook.before_run(_RunContext(run_context, self._checked(run_context.session, "before_run")))
        if request is None:
            return None
        if request is self._last_request:
            return self._last_translated
        rule = self.rule()

        def leaf(fetch: Any) -> Any:
            replacement, reason = rule.in_window(fetch)
            if reason is not None:
                raise self.refusal("before_run", "fetches", fetch, reason, before_first_step=not self.started)
            return replacement

        fetches = request.fetches if request.fetches is None else _map_structure(request.fetches, leaf)
        for key in request.feed_dict or ():
            reason = rule.feed(key)
            if reason is not None:
                raise self.refusal("before_run", "feeds", key, reason, before_first_step=not self.started)
        translated = request if fetches is request.fetches else request._replace(fetches=fetches)
        if not request.feed_dict and _immutable(request.fetches):
            self._last_request, self._last_translated = request, translated
        return translated

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """The hook's ``after_run``, with the checking session; its results have its own request's structure."""
        self.started = True
        self.hook.after_run(_RunContext(run_context, self._checked(run_context.session, "after_run")), run_values)

    def end(self, session: Any) -> None:
        """The hook's ``end``, with the checking session."""
        self.hook.end(self._checked(session, "end"))

    def _checked(self, session: Any, method: str) -> Any:
        """``session`` as this hook's ``method`` gets it: ``run`` checks each fetch (see :class:`_Session`)."""
        return _session_class()(session, self, method)


def _immutable(fetches: Any) -> bool:
    """True for a leaf or a tuple of leaves (a request that cannot change after the fact)."""
    if isinstance(fetches, tuple):
        return all(map(_immutable, fetches))
    return not isinstance(fetches, (list, Mapping))
