"""hookrun's session engine: TensorFlow's lifecycle, with one cached session call per step shape.

``tf.compat.v1.train.MonitoredSession`` spends most of a small step in
Python: ``Session.run`` rebuilds its fetch handler for the merged fetch
dict on every call, and a fresh ``RunOptions``/``RunMetadata`` pair is
serialised on every step. This engine keeps TensorFlow's own session
creation, restore and recovery pieces (a ``SessionCreator`` such as
``ChiefSessionCreator`` with its ``Scaffold`` and ``SessionManager``, and a
``Coordinator``), and owns only the per-step dispatch:

- the hooks' ``SessionRunArgs`` are merged as ``_HookedSession`` merges them
  (same feed-conflict errors, same ``RunOptions`` merging:
  :func:`hookrun.runner.session.hooked_run.run_merged`, which the evaluation
  hooks' runs use too);
- the step's *shape* (the caller's fetches and each hook's request) keys a
  cache of :class:`_StepPlan`: the unique tensors and ops of the step,
  flattened once, and run with the single call ``Session.make_callable``
  makes, so a step whose hooks ask for the same things as an earlier one
  skips the fetch-handler rebuild and the per-hook merge;
- each hook gets exactly the result structure TensorFlow would give it.

Steps that feed tensors or ask for ``RunOptions`` or ``RunMetadata``, or
whose shape is not cacheable, merge the requests and take ``Session.run``
as TensorFlow's ``_HookedSession`` does. The lifecycle is
TensorFlow's, call for call; ``tests/conformance`` runs the same recording
hooks under this engine, under ``MonitoredTrainingSession`` and under a plain
``MonitoredSession`` loop and asserts identical sequences:

1. ``begin`` on every hook, in order; then the session creator finalizes the graph;
2. ``after_create_session`` on every hook after each (re-)created session;
3. ``before_run``/``after_run`` around every ``run``;
4. ``end`` when the session closes without an error. End of data
   (``OutOfRangeError``/``StopIteration``) counts as no error: ``end`` runs,
   that step's ``after_run`` does not. Any other error: neither. A non-recoverable error a
   coordinator thread reports (``coord.request_stop(err)``) makes the next ``should_stop`` answer
   True: ``end`` runs, and closing the session (``Coordinator.join``) raises the error, as
   ``_CoordinatedSession.close`` does.

``AbortedError``/``UnavailableError`` (TensorFlow's preemption errors) close
the session and create a new one, restoring the latest checkpoint;
``after_create_session`` runs again, ``begin`` does not, and the interrupted
``run`` is retried, exactly as ``_RecoverableSession`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from hookrun.hooks import tf_internals
from hookrun.runner.session.hooked_run import raise_if_feeds_intersect, run_merged

_PREEMPTION_ERRORS = (tf.errors.AbortedError, tf.errors.UnavailableError)

#: Most distinct step shapes cached per session; further shapes take ``Session.run``.
MAX_CALLABLES = 64

logging = tf_internals.tf_logging()

_SessionRunArgs = tf.compat.v1.train.SessionRunArgs
_SessionRunContext = tf.compat.v1.train.SessionRunContext
_SessionRunValues = tf.compat.v1.train.SessionRunValues


#: The call ``Session.make_callable`` makes on every step, without its Python wrappers (None: use make_callable).
_session_run = tf_internals.session_run_wrapper()


class _Uncacheable(Exception):
    """A fetch structure this engine does not key (that step takes ``Session.run``)."""


#: Types keyed by identity: graph elements (the graph is finalized, so they live as long as the session).
_LEAF_TYPES: set[type] = set()


def _shape_key(fetches: Any) -> Any:
    """A hashable key for a fetch structure, cheap to build on every step.

    Graph elements key by identity (the graph is finalized, so they live as
    long as the session and are never re-created); strings by value; lists,
    tuples and mappings by their items, recursively.

    Raises:
        _Uncacheable: a structure type this function does not know.
    """
    kind = type(fetches)
    if kind in _LEAF_TYPES:
        return id(fetches)
    if kind is str:
        return fetches
    if kind is list or kind is tuple:
        return (kind, tuple(_shape_key(item) for item in fetches))
    if kind is dict:
        return (dict, tuple((name, _shape_key(item)) for name, item in fetches.items()))
    if isinstance(fetches, (tf.Tensor, tf.Operation)):
        _LEAF_TYPES.add(kind)
        return id(fetches)
    if isinstance(fetches, (list, tuple)):  # namedtuples and other sequences
        return (kind, tuple(_shape_key(item) for item in fetches))
    if isinstance(fetches, Mapping):
        return (kind, tuple((name, _shape_key(item)) for name, item in fetches.items()))
    if hasattr(fetches, "graph") or hasattr(fetches, "op"):  # tf.Variable and other graph-element-likes
        return id(fetches)
    raise _Uncacheable(kind.__name__)


class _StepPlan:
    """One step shape, flattened: the unique tensors to fetch, the ops to run, and how to repack.

    Built once per shape (the caller's fetches and each hook's request);
    every later step with that shape makes the single call
    ``Session.make_callable`` makes (``TF_SessionRun_wrapper`` on a fixed
    fetch and target list, no fetch-handler walk) and hands each hook its
    part. ``tf.Tensor``, ``tf.Operation``, variables and tensor or op names are
    handled as leaves, in lists, tuples and dicts; anything else raises
    :class:`_Uncacheable` and that shape takes ``Session.run``.

    Attributes:
        caller: how to build the caller's result from the fetched values.
        hooks: per hook, in order: None (asked for nothing, or only ops), an ``int`` (the
            position of its one tensor) or a function ``values -> its results``.
        run: ``() -> list of values`` (one per unique tensor).
    """

    def __init__(self, sess: Any, caller: Any, requests: list[Any]) -> None:
        self._graph = sess.graph
        self._tensors: list[Any] = []
        self._ops: list[Any] = []
        self._index: dict[int, int] = {}
        self._alive = (caller, [None if r is None else r.fetches for r in requests])  # keeps the keyed ids alive
        self.caller = self._packer(caller)
        self.hooks = [None if r is None or r.fetches is None else self._packer(r.fetches) for r in requests]
        if _session_run is not None and tf_internals.raw_session(sess) is not None:
            fetch_list = tf_internals.fetch_outputs(self._tensors)
            target_list = tf_internals.target_ops(self._ops)
            self.run = functools.partial(
                _session_run, tf_internals.raw_session(sess), None, {}, fetch_list, target_list, None
            )
        else:  # pragma: no cover - the same through the public API; tensors come first, so positions hold
            self.run = sess.make_callable([*self._tensors, *self._ops])

    def _leaf(self, fetch: Any) -> Any:
        element = fetch
        if not isinstance(fetch, (tf.Tensor, tf.Operation)):  # names, variables: as Session.run resolves them
            try:
                element = self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
            except (TypeError, ValueError, KeyError) as err:
                raise _Uncacheable(type(fetch).__name__) from err
        if isinstance(element, tf.Operation):
            if id(element) not in self._index:
                self._index[id(element)] = -1
                self._ops.append(element)
            return None
        if not isinstance(element, tf.Tensor):
            raise _Uncacheable(type(fetch).__name__)
        position = self._index.get(id(element))
        if position is None:
            position = self._index[id(element)] = len(self._tensors)
            self._tensors.append(element)
        return position

    def _packer(self, fetches: Any) -> Any:
        """None, a value position, or a function ``values -> the structure of fetches`` (as ``Session.run``)."""
        kind = type(fetches)
        if kind is dict:
            pairs = [(name, _as_function(self._packer(item))) for name, item in fetches.items()]
            return lambda values: {name: pack(values) for name, pack in pairs}
        if kind is list or kind is tuple:
            packs = [_as_function(self._packer(item)) for item in fetches]
            return lambda values: kind(pack(values) for pack in packs)
        if isinstance(fetches, (list, tuple, Mapping)):
            raise _Uncacheable(kind.__name__)  # namedtuples, other mappings: Session.run
        return self._leaf(fetches)


def _frozen(fetches: Any) -> bool:
    """True if ``fetches`` cannot change after the fact: a graph element, a name, or a tuple of those."""
    kind = type(fetches)
    if kind in _LEAF_TYPES or kind is str:
        return True
    return kind is tuple and all(map(_frozen, fetches))


def _frozen_request(request: Any) -> bool:
    """True for None, or a ``SessionRunArgs`` of frozen fetches with no feeds or options (a namedtuple itself)."""
    return request is None or (not request.feed_dict and not request.options and _frozen(request.fetches))


def _same_objects(previous: list[Any], current: list[Any]) -> bool:
    """True if the two request lists hold the very same objects, position by position."""
    for a, b in zip(previous, current, strict=True):
        if a is not b:
            return False
    return True


def _as_function(packer: Any) -> Any:
    """A packer as a function of the values (``None``: an op's result; ``int``: a position)."""
    if packer is None:
        return lambda values: None
    if type(packer) is int:
        return lambda values: values[packer]
    return packer


class HookedMonitoredSession:
    """A ``MonitoredSession`` with hookrun's per-step dispatch; mirrors ``tf.compat.v1.train.MonitoredSession``.

    Use it exactly like ``MonitoredSession``: as a context manager, calling
    ``should_stop()`` and ``run(fetches)``. It always recovers from
    preemption errors (``MonitoredSession``'s default).

    When each hook method fires: see the module docstring; the order is
    TensorFlow's, and the hooks are called in list order in every phase.

    Args:
        session_creator: a ``tf.compat.v1.train.SessionCreator`` (e.g. ``ChiefSessionCreator``
            with the run's ``Scaffold`` and ``checkpoint_dir``); it finalizes the graph.
        hooks: ``SessionRunHook`` instances, in call order.
        stop_grace_period_secs: time given to the coordinator's threads to stop at close (seconds).

    Raises:
        RuntimeError: ``run`` after a stop was requested; two hooks (or a hook and the
            caller) feeding the same tensor — TensorFlow's own messages.
        Any exception a hook or the graph raises, as ``MonitoredSession`` would.

    Example:
        >>> creator = tf.compat.v1.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir="runs/x")
        >>> with HookedMonitoredSession(creator, hooks) as session:
        ...     while not session.should_stop():
        ...         session.run(train_op)
    """

    def __init__(self, session_creator: Any, hooks: list[Any], stop_grace_period_secs: float = 120) -> None:
        self._graph = tf.compat.v1.get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks)
        for hook in self._hooks:
            hook.begin()
        self._creator = session_creator
        self._grace = stop_grace_period_secs
        self._tf_sess: Any = None
        self._coord: Any = None
        self._should_stop = False
        self._closed = False
        self._plans: dict[Any, _StepPlan] = {}
        self._last: tuple[Any, list[Any], _StepPlan] | None = None  # the last step's caller, requests and plan
        self._original_args: Any = None  # the last SessionRunArgs(fetches, None) for run contexts
        self._no_options = tf.compat.v1.RunOptions()
        self._no_metadata = tf.compat.v1.RunMetadata()
        self._none_values = _SessionRunValues(results=None, options=self._no_options, run_metadata=self._no_metadata)
        self._create_session()

    # -- session creation and recovery (_RecoverableSession, _CoordinatedSessionCreator) ------------

    def _create_session(self) -> None:
        while True:
            try:
                self._create_coordinated()
                return
            except _PREEMPTION_ERRORS as err:
                logging.info(
                    "An error was raised while a session was being created; a new session will be "
                    "created (preemption of a connected task, or a gRPC failure). Error: %s",
                    err,
                )

    def _create_coordinated(self) -> None:
        self._tf_sess = self._creator.create_session()
        self._coord = tf.compat.v1.train.Coordinator(clean_stop_exception_types=[])
        if tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS):
            tf.compat.v1.train.start_queue_runners(sess=self._tf_sess, coord=self._coord)
        self._plans = {}
        self._last = None
        self._should_stop = False  # a new session starts a new _HookedSession
        for hook in self._hooks:
            hook.after_create_session(self._tf_sess, self._coord)

    def _close_session(self) -> None:
        """Close the current session as ``_CoordinatedSession.close`` does (no hook ``end``)."""
        sess, coord = self._tf_sess, self._coord
        self._tf_sess = None
        self._plans = {}
        self._last = None
        if sess is None:
            return
        try:
            coord.request_stop()
            try:
                coord.join(stop_grace_period_secs=self._grace, ignore_live_threads=True)
            finally:
                try:
                    sess.close()
                except Exception:  # noqa: BLE001 - as _CoordinatedSession.close
                    pass
        except _PREEMPTION_ERRORS as err:
            logging.error("An error occurred when attempting to close the session (preemption?). Error: %s", err)

    def _check_coordinator(self) -> bool:
        self._coord.raise_requested_exception()
        return bool(self._coord.should_stop())

    # -- the public MonitoredSession surface -------------------------------------------------------

    @property
    def graph(self) -> Any:
        """The graph the session runs."""
        return self._graph

    def should_stop(self) -> bool:
        """True once a hook requested a stop, the coordinator stopped, or the session closed."""
        if self._tf_sess is None:
            return True
        # _RecoverableSession._check_stop, then _CoordinatedSession.should_stop: both ask the same
        # coordinator, with nothing in between, so one check answers both.
        try:
            if self._check_coordinator():
                return True
        except _PREEMPTION_ERRORS as err:
            logging.info("An error was raised while checking for a stop; recreating the session. Error: %s", err)
            self._close_session()
            self._create_session()
            return False
        except Exception:  # noqa: BLE001 - as _RecoverableSession._check_stop
            return True
        return self._should_stop  # _HookedSession

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        """Run one step with every hook's ``before_run``/``after_run`` around it.

        Args:
            fetches: what the caller fetches (e.g. ``train_op``), as for ``Session.run``.
            feed_dict: the caller's feeds, or None.
            options: ``RunOptions`` for this step, or None.
            run_metadata: a ``RunMetadata`` to fill, or None.

        Returns:
            The caller's fetched values, in the structure of ``fetches``.
        """
        while True:  # _RecoverableSession.run
            try:
                if self._tf_sess is None:
                    self._create_session()
                return self._run_coordinated(fetches, feed_dict, options, run_metadata)
            except _PREEMPTION_ERRORS as err:
                logging.info(
                    "An error was raised; the current session will be closed and a new one created "
                    "(preemption of a connected task, or a gRPC failure). Error: %s",
                    err,
                )
                self._close_session()

    def run_step_fn(self, step_fn: Any) -> Any:
        """Call ``step_fn(step_context)`` with the raw session; mirrors ``MonitoredSession.run_step_fn``.

        ``step_context.session.run`` runs without hooks; ``step_context.run_with_hooks`` runs
        with them, as :meth:`run`. Preemption errors recreate the session and call ``step_fn`` again.

        Raises:
            ValueError: ``step_fn`` does not take exactly one ``step_context`` argument (after ``self``).
            StopIteration: ``step_fn`` called ``step_context.request_stop()``.
        """
        arguments = tf_internals.function_arguments(step_fn)
        if arguments not in (("step_context",), ("self", "step_context")):
            raise ValueError(
                "`step_fn` may either have one `step_context` argument, or `self` and `step_context` "
                f"arguments if it's an instance method. Got {arguments} instead."
            )
        while True:
            try:
                if self._tf_sess is None:
                    self._create_session()
                context = tf.compat.v1.train.MonitoredSession.StepContext(self._tf_sess, self._run_with_hooks)
                return step_fn(context)
            except _PREEMPTION_ERRORS as err:
                logging.info("An error was raised in step_fn; recreating the session. Error: %s", err)
                self._close_session()

    def _run_with_hooks(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        return self._run_coordinated(fetches, feed_dict, options, run_metadata)

    def _run_coordinated(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        try:
            return self._run_hooked(fetches, feed_dict, options, run_metadata)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as original:  # _CoordinatedSession.run: a coordinator error takes precedence
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001
                raise original from None
            raise

    def _run_hooked(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        """``_HookedSession.run``: every ``before_run``, one session call, every ``after_run``.

        A step whose caller and hooks ask for no feeds, ``RunOptions`` or
        ``RunMetadata`` runs through the :class:`_StepPlan` cached for its
        shape; any other step merges the requests exactly as
        ``_HookedSession`` does and calls ``Session.run``.
        """
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        sess = self._tf_sess
        original_args = self._original_args
        if original_args is None or original_args.fetches is not fetches or feed_dict is not None:
            original_args = _SessionRunArgs(fetches, feed_dict)  # an immutable namedtuple: shared across steps
            self._original_args = original_args if feed_dict is None else None
        run_context = _SessionRunContext(original_args=original_args, session=sess)
        hooks = self._hooks
        requests = []
        fed = None
        for hook in hooks:
            request = hook.before_run(run_context)
            if request is not None and request.feed_dict:
                # as _HookedSession: a second hook feeding a tensor raises at once, before the later before_run
                if fed is None:
                    fed = {}
                raise_if_feeds_intersect(fed, request.feed_dict, "Same tensor is fed by two hooks.")
                fed.update(request.feed_dict)
            requests.append(request)
        plan = None
        if feed_dict is None and options is None and run_metadata is None:
            last = self._last
            if last is not None and last[0] is fetches and _same_objects(last[1], requests):
                plan = last[2]
            else:
                plan = self._plan_for(sess, fetches, requests)
        if plan is not None:
            values = plan.run()
            none_values = self._none_values
            no_options, no_metadata = self._no_options, self._no_metadata
            for hook, pack in zip(hooks, plan.hooks, strict=True):
                if pack is None:
                    hook.after_run(run_context, none_values)
                else:
                    results = values[pack] if type(pack) is int else pack(values)
                    hook.after_run(run_context, _SessionRunValues(results, no_options, no_metadata))
            caller = plan.caller
            result = None if caller is None else values[caller] if type(caller) is int else caller(values)
        else:
            result = run_merged(sess, hooks, run_context, requests, fetches, feed_dict, options, run_metadata)
        self._should_stop = self._should_stop or run_context.stop_requested
        return result

    def _plan_for(self, sess: Any, fetches: Any, requests: list[Any]) -> _StepPlan | None:
        """The cached plan for this step's shape, built on first sight; None if the step needs ``Session.run``."""
        try:
            key: list[Any] = [_shape_key(fetches)]
            for request in requests:
                if request is None:
                    key.append(None)
                    continue
                if request.feed_dict or request.options:
                    return None
                key.append(_shape_key(request.fetches))
        except _Uncacheable:
            return None
        shape = tuple(key)
        plan = self._plans.get(shape)
        if plan is None:
            if len(self._plans) >= MAX_CALLABLES:
                return None
            try:
                plan = _StepPlan(sess, fetches, requests)
            except _Uncacheable:
                return None
            self._plans[shape] = plan
        # The next step may skip the keying if its caller and every request are these same objects, and
        # none of them can change (graph elements, names, tuples of them): see _frozen.
        self._last = (fetches, requests, plan) if _frozen(fetches) and all(map(_frozen_request, requests)) else None
        return plan

    # -- closing (_MonitoredSession._close_internal) -------------------------------------------------

    def close(self) -> None:
        """Run every hook's ``end`` and close the session."""
        self._close_internal()

    def _close_internal(self, exception_type: Any = None) -> None:
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._tf_sess)
        finally:
            try:
                if self._closed:
                    raise RuntimeError("Session is already closed.")
                self._close_session()
            finally:
                self._closed = True
                self._tf_sess = None
                self._coord = None
                if not self._graph_was_finalized:
                    tf_internals.unfinalize(self._graph)

    def __enter__(self) -> HookedMonitoredSession:
        return self

    def __exit__(self, exception_type: Any, exception_value: Any, traceback: Any) -> bool:
        if exception_type in (tf.errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None
