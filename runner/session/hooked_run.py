"""One ``Session.run`` with the hooks' ``SessionRunArgs`` merged into it, as ``_HookedSession`` does.

``tf.compat.v1.train.MonitoredSession`` wraps its session in ``_HookedSession``, whose ``run`` merges
every hook's ``before_run`` request (fetches, ``feed_dict``, ``RunOptions``) into one ``Session.run``
and hands each hook its own results in ``after_run``. :func:`run_merged` is that merge and call, shared
by the engine's uncached steps (:class:`hookrun.runner.session.engine.HookedMonitoredSession`) and the
evaluation passes with ``evaluation_hooks`` (:mod:`hookrun.runner.session.eval_hooks`).

This module imports TensorFlow; import it only from code that already has.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tensorflow as tf

_SessionRunValues = tf.compat.v1.train.SessionRunValues


def run_merged(
    sess: Any,
    hooks: list[Any],
    run_context: Any,
    requests: Iterable[Any],
    fetches: Any,
    feed_dict: Any = None,
    options: Any = None,
    run_metadata: Any = None,
) -> Any:
    """Merge the hooks' requests, call ``sess.run`` once, call every ``after_run``; mirrors ``_HookedSession.run``.

    Follows ``tf.compat.v1.train.MonitoredSession``'s ``_HookedSession.run`` and ``_call_hook_before_run``:
    each request's fetches are run beside the caller's; its ``feed_dict`` is added to the hooks' feeds
    (two hooks feeding one tensor raise); its ``RunOptions`` are merged into ``options`` (the caller's
    object, which is changed, or a new one) by :func:`merge_run_options`; the caller's ``feed_dict`` is
    added last (a tensor fed by a hook and the caller raises).

    Args:
        sess: the ``tf.compat.v1.Session`` (or a wrapper with its ``run``) to call.
        hooks: the ``SessionRunHook`` objects, in order; every one gets ``after_run``.
        run_context: the step's ``SessionRunContext``, passed to every ``after_run``.
        requests: the hooks' ``before_run`` returns (a ``SessionRunArgs`` or None), one a hook, in
            ``hooks``' order. It may be lazy (a generator calling ``before_run``): it is read once, a
            request at a time, so a feed conflict raises before the later hooks' ``before_run``, as in
            ``_HookedSession``.
        fetches: the caller's fetches (any structure ``Session.run`` takes).
        feed_dict: the caller's ``feed_dict``, or None.
        options: the caller's ``RunOptions``, or None.
        run_metadata: the caller's ``RunMetadata``, or None (a new one is passed to the hooks).

    Returns:
        The caller's results, in the structure of ``fetches``.

    Raises:
        RuntimeError: ``"Same tensor is fed by two hooks. Conflict(s): [...]"`` or ``"Same tensor is fed
            by a SessionRunHook and user. Conflict(s): [...]"``, TensorFlow's messages.
        Whatever ``sess.run``, a ``before_run`` (through a lazy ``requests``) or an ``after_run`` raises.
    """
    fetch_dict: dict[Any, Any] = {"caller": fetches}
    hook_feeds: dict[Any, Any] = {}
    merged_options = options
    for index, request in enumerate(requests):
        if request is None:
            continue
        if request.fetches is not None:
            fetch_dict[index] = request.fetches
        if request.feed_dict:
            raise_if_feeds_intersect(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
            hook_feeds.update(request.feed_dict)
        if request.options:
            if merged_options is None:
                merged_options = tf.compat.v1.RunOptions()
            merge_run_options(merged_options, request.options)
    if hook_feeds and feed_dict:
        raise_if_feeds_intersect(feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(feed_dict)
        feeds = hook_feeds
    else:
        feeds = hook_feeds or feed_dict
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
    return outputs["caller"]


def raise_if_feeds_intersect(feeds1: Any, feeds2: Any, message: str) -> None:
    """Raise if two feed dicts share a key; mirrors ``_HookedSession._raise_if_feeds_intersects``.

    Args:
        feeds1: a ``feed_dict`` mapping (tensors or names to values).
        feeds2: another one.
        message: the first sentence of the error.

    Raises:
        RuntimeError: ``message + " Conflict(s): " + str(list(shared keys))``.
    """
    intersection = set(feeds1.keys()) & set(feeds2.keys())
    if intersection:
        raise RuntimeError(message + " Conflict(s): " + str(list(intersection)))


def merge_run_options(options: Any, incoming: Any) -> None:
    """Merge ``incoming`` into ``options``; mirrors ``_HookedSession._merge_run_options``.

    The numbers (``trace_level``, ``timeout_in_ms``, ``inter_op_thread_pool``,
    ``output_partition_graphs``) take the larger of the two, the flags (``reset_disk_byte_usage``,
    ``report_tensor_allocations_upon_oom``) the OR, and ``debug_tensor_watch_opts`` are appended.

    Args:
        options: the ``tf.compat.v1.RunOptions`` changed in place.
        incoming: the ``tf.compat.v1.RunOptions`` merged into it (not changed).
    """
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
