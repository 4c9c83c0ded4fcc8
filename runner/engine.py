"""hookrun's session engine: TensorFlow's lifecycle, with a cached ``make_callable`` per step shape.

``tf.compat.v1.train.MonitoredSession`` spends most of a small step in
Python: ``Session.run`` rebuilds its fetch handler for the merged fetch
dict on every call, and a fresh ``RunOptions``/``RunMetadata`` pair is
serialised on every step. This engine keeps TensorFlow's own session
creation, restore and recovery pieces (a ``SessionCreator`` such as
``ChiefSessionCreator`` with its ``Scaffold`` and ``SessionManager``, and a
``Coordinator``), and owns only the per-step dispatch:

- the hooks' ``SessionRunArgs`` are merged as ``_HookedSession`` merges them
  (same feed-conflict errors, same ``RunOptions`` merging);
- the merged request's *shape* (the fetch structure, the feed keys) keys a
  cache of ``Session.make_callable`` callables, so a step whose hooks ask
  for the same things as an earlier one skips the fetch-handler rebuild;
- each hook gets exactly the result structure TensorFlow would give it.

Steps that ask for ``RunOptions`` or ``RunMetadata``, or whose shape is not
cacheable, take ``Session.run`` as TensorFlow does. The lifecycle is
TensorFlow's, call for call; ``tests/conformance`` runs the same recording
hooks under this engine, under ``MonitoredTrainingSession`` and under a plain
``MonitoredSession`` loop and asserts identical sequences:

1. ``begin`` on every hook, in order; then the session creator finalizes the graph;
2. ``after_create_session`` on every hook after each (re-)created session;
3. ``before_run``/``after_run`` around every ``run``;
4. ``end`` when the session closes without an error. End of data
   (``OutOfRangeError``/``StopIteration``) counts as no error: ``end`` runs,
   that step's ``after_run`` does not. Any other error: neither.

``AbortedError``/``UnavailableError`` (TensorFlow's preemption errors) close
the session and create a new one, restoring the latest checkpoint;
``after_create_session`` runs again, ``begin`` does not, and the interrupted
``run`` is retried, exactly as ``_RecoverableSession`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf
from tensorflow.python.platform import tf_logging as logging

_PREEMPTION_ERRORS = (tf.errors.AbortedError, tf.errors.UnavailableError)

#: Most distinct step shapes cached per session; further shapes run through ``Session.run``.
MAX_CALLABLES = 64

_SessionRunArgs = tf.compat.v1.train.SessionRunArgs
_SessionRunContext = tf.compat.v1.train.SessionRunContext
_SessionRunValues = tf.compat.v1.train.SessionRunValues


class _Uncacheable(Exception):
    """A fetch structure this engine does not key (falls back to ``Session.run``)."""


def _shape_key(fetches: Any) -> Any:
    """A hashable key for a fetch structure, cheap to build on every step.

    Graph elements key by identity (the graph is finalized, so they live as
    long as the session and are never re-created); strings by value; lists,
    tuples and mappings by their items, recursively.

    Raises:
        _Uncacheable: a structure type this function does not know.
    """
    kind = type(fetches)
    if kind is str:
        return fetches
    if kind is list or kind is tuple:
        return (kind, tuple(_shape_key(item) for item in fetches))
    if kind is dict:
        return (dict, tuple((name, _shape_key(item)) for name, item in fetches.items()))
    if isinstance(fetches, (list, tuple)):  # namedtuples and other sequences
        return (kind, tuple(_shape_key(item) for item in fetches))
    if isinstance(fetches, Mapping):
        return (kind, tuple((name, _shape_key(item)) for name, item in fetches.items()))
    if hasattr(fetches, "graph") or hasattr(fetches, "op"):  # tf.Tensor, tf.Operation, tf.Variable
        return id(fetches)
    raise _Uncacheable(kind.__name__)


class _FlatPlan:
    """One step shape, flattened: unique graph elements to fetch, and how to repack each request.

    Built once per shape; every later step with that shape runs one flat
    ``make_callable`` (no nested fetch-handler walk) and repacks the values.
    Only ``tf.Tensor``, ``tf.Operation`` and tensor/op names are handled
    here; any other leaf raises :class:`_Uncacheable` so that the shape
    takes the structured ``make_callable`` path instead.
    """

    def __init__(self, graph: Any, fetch_dict: dict[Any, Any]) -> None:
        self.elements: list[Any] = []
        self._index: dict[int, int] = {}
        self._graph = graph
        self.packers = {key: self._packer(value) for key, value in fetch_dict.items()}

    def _leaf(self, fetch: Any) -> int:
        element = fetch
        if type(fetch) is str:
            element = self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        if not isinstance(element, (tf.Tensor, tf.Operation)):
            raise _Uncacheable(type(fetch).__name__)
        position = self._index.get(id(element))
        if position is None:
            position = self._index[id(element)] = len(self.elements)
            self.elements.append(element)
        return position

    def _packer(self, fetches: Any) -> Any:
        """A function ``values -> the structure of fetches``, as ``Session.run`` returns it."""
        kind = type(fetches)
        if kind is dict:
            pairs = [(name, self._packer(item)) for name, item in fetches.items()]
            return lambda values: {name: pack(values) for name, pack in pairs}
        if kind is list or kind is tuple:
            packs = [self._packer(item) for item in fetches]
            return lambda values: kind(pack(values) for pack in packs)
        if isinstance(fetches, (list, tuple, Mapping)):
            raise _Uncacheable(kind.__name__)  # namedtuples, other mappings: the structured path
        position = self._leaf(fetches)
        return lambda values: values[position]


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
        self._callables: dict[Any, Any] = {}
        self._no_options = tf.compat.v1.RunOptions()
        self._no_metadata = tf.compat.v1.RunMetadata()
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
        self._callables = {}
        self._should_stop = False  # a new session starts a new _HookedSession
        for hook in self._hooks:
            hook.after_create_session(self._tf_sess, self._coord)

    def _close_session(self) -> None:
        """Close the current session as ``_CoordinatedSession.close`` does (no hook ``end``)."""
        sess, coord = self._tf_sess, self._coord
        self._tf_sess = None
        self._callables = {}
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
        try:  # _RecoverableSession._check_stop
            if self._check_coordinator():
                return True
        except _PREEMPTION_ERRORS as err:
            logging.info("An error was raised while checking for a stop; recreating the session. Error: %s", err)
            self._close_session()
            self._create_session()
            return False
        except Exception:  # noqa: BLE001 - as _RecoverableSession._check_stop
            return True
        if self._check_coordinator():  # _CoordinatedSession.should_stop
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
        from tensorflow.python.util import function_utils

        arguments = function_utils.fn_args(step_fn)
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
        """``_HookedSession.run`` with the cached-callable fast path."""
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        sess = self._tf_sess
        run_context = _SessionRunContext(original_args=_SessionRunArgs(fetches, feed_dict), session=sess)
        hooks = self._hooks
        fetch_dict: dict[Any, Any] = {"caller": fetches}
        hook_feeds: dict[Any, Any] = {}
        merged_options = options
        for index, hook in enumerate(hooks):
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                fetch_dict[index] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if request.options:
                if merged_options is None:
                    merged_options = tf.compat.v1.RunOptions()
                _merge_run_options(merged_options, request.options)
        if hook_feeds and feed_dict:
            _raise_if_feeds_intersect(feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
            hook_feeds.update(feed_dict)
            feeds = hook_feeds
        else:
            feeds = hook_feeds or feed_dict

        if merged_options is None and run_metadata is None:
            outputs = self._run_cached(sess, fetch_dict, feeds)
            values_options, values_metadata = self._no_options, self._no_metadata
        else:
            values_options = merged_options if merged_options is not None else tf.compat.v1.RunOptions()
            values_metadata = run_metadata if run_metadata is not None else tf.compat.v1.RunMetadata()
            outputs = sess.run(fetch_dict, feed_dict=feeds, options=values_options, run_metadata=values_metadata)

        for index, hook in enumerate(hooks):
            hook.after_run(
                run_context,
                _SessionRunValues(
                    results=outputs[index] if index in outputs else None,
                    options=values_options,
                    run_metadata=values_metadata,
                ),
            )
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _run_cached(self, sess: Any, fetch_dict: dict[Any, Any], feeds: Any) -> Any:
        """Run through a ``make_callable`` cached for this step's shape (``Session.run`` if uncacheable)."""
        try:
            feed_keys = tuple(feeds) if feeds else ()
            key = (_shape_key(fetch_dict), tuple(_shape_key(k) for k in feed_keys))
        except _Uncacheable:
            return sess.run(fetch_dict, feed_dict=feeds)
        entry = self._callables.get(key)
        if entry is None:
            if len(self._callables) >= MAX_CALLABLES:
                return sess.run(fetch_dict, feed_dict=feeds)
            entry = self._callables[key] = self._make_entry(sess, fetch_dict, list(feed_keys))
        step_callable, plan, _ = entry
        values = step_callable(*[feeds[k] for k in feed_keys]) if feeds else step_callable()
        if plan is None:
            return values
        return {name: pack(values) for name, pack in plan.packers.items()}

    def _make_entry(self, sess: Any, fetch_dict: dict[Any, Any], feed_keys: list[Any]) -> tuple[Any, Any, Any]:
        """Build the cache entry ``(callable, plan or None, fetch_dict)`` for a new step shape.

        The entry keeps ``fetch_dict`` alive, so the identities in its key are never reused.
        """
        try:
            plan = _FlatPlan(sess.graph, fetch_dict)
        except _Uncacheable:
            return sess.make_callable(fetch_dict, feed_list=feed_keys or None), None, fetch_dict
        return sess.make_callable(plan.elements, feed_list=feed_keys or None), plan, fetch_dict

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
                    self._graph._unsafe_unfinalize()

    def __enter__(self) -> HookedMonitoredSession:
        return self

    def __exit__(self, exception_type: Any, exception_value: Any, traceback: Any) -> bool:
        if exception_type in (tf.errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


def _raise_if_feeds_intersect(feeds1: Any, feeds2: Any, message: str) -> None:
    intersection = set(feeds1.keys()) & set(feeds2.keys())
    if intersection:
        raise RuntimeError(message + " Conflict(s): " + str(list(intersection)))


def _merge_run_options(options: Any, incoming: Any) -> None:
    """Merge ``incoming`` into ``options`` as ``_HookedSession._merge_run_options`` does."""
    options.trace_level = max(options.trace_level, incoming.trace_level)
    options.timeout_in_ms = max(options.timeout_in_ms, incoming.timeout_in_ms)
    options.inter_op_thread_pool = max(options.inter_op_thread_pool, incoming.inter_op_thread_pool)
    options.output_partition_graphs = max(options.output_partition_graphs, incoming.output_partition_graphs)
    options.debug_options.debug_tensor_watch_opts.extend(incoming.debug_options.debug_tensor_watch_opts)
    options.debug_options.reset_disk_byte_usage = (
        options.debug_options.reset_disk_byte_usage or incoming.debug_options.reset_disk_byte_usage
    )
    options.report_tensor_allocations_upon_oom = (
        options.report_tensor_allocations_upon_oom or incoming.report_tensor_allocations_upon_oom
    )
