"""The engine's per-step dispatch gives every hook and the caller exactly what ``MonitoredSession`` gives them.

Values that change per step come from feeds and per-step constants, so no read races the train op.

The same requesting hooks run on the same kind of graph under TensorFlow's ``MonitoredSession`` and
under :class:`HookedMonitoredSession`; every result each hook and the caller receive is recorded and
compared, step by step. The lifecycle order itself is covered by ``tests/conformance``.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

from hookrun.runner.session import engine
from hookrun.runner.session.engine import HookedMonitoredSession

v1 = tf.compat.v1
Pair = collections.namedtuple("Pair", "first second")


class Requester(v1.train.SessionRunHook):
    """Ask for ``make(graph, step)`` before each run; record what comes back."""

    def __init__(self, make):
        self.make = make
        self.seen = []
        self.options_seen = []
        self.step = 0

    def before_run(self, run_context):
        self.step += 1
        return self.make(v1.get_default_graph(), self.step)

    def after_run(self, run_context, run_values):
        self.seen.append(_plain(run_values.results))
        self.options_seen.append(run_values.options.trace_level)


def _plain(value):
    """Results as plain Python (numpy scalars -> Python numbers), keeping the structure and its types."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, tuple(_plain(item) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def _variable(name):
    return next(v for v in v1.global_variables() if v.op.name == name)


def _g(graph, name):
    return graph.get_tensor_by_name(name)


REQUESTS = {
    "nothing": lambda g, step: None,
    "tensor": lambda g, step: v1.train.SessionRunArgs(_g(g, "w_value:0")),
    "op": lambda g, step: v1.train.SessionRunArgs(g.get_operation_by_name("bump_w")),
    "name": lambda g, step: v1.train.SessionRunArgs("doubled:0"),
    "variable": lambda g, step: v1.train.SessionRunArgs(_variable("v")),
    "nested": lambda g, step: v1.train.SessionRunArgs(
        {
            "a": [_g(g, "w_value:0"), _g(g, "doubled:0")],
            "b": (_g(g, "w_value:0"), g.get_operation_by_name("noop")),
            "c": {},
        }
    ),
    "every_third": lambda g, step: v1.train.SessionRunArgs([_g(g, "doubled:0")]) if step % 3 == 0 else None,
    "namedtuple": lambda g, step: v1.train.SessionRunArgs(Pair(_g(g, "w_value:0"), _g(g, "doubled:0"))),
    "feed": lambda g, step: v1.train.SessionRunArgs(_g(g, "fed_out:0"), feed_dict={_g(g, "fed:0"): float(step)}),
    "options": lambda g, step: v1.train.SessionRunArgs(
        _g(g, "w_value:0"), options=v1.RunOptions(trace_level=v1.RunOptions.SOFTWARE_TRACE) if step % 2 else None
    ),
    "many_shapes": lambda g, step: v1.train.SessionRunArgs(_g(g, f"c{step % 70}:0")),
}


def _run(session_type, names, caller, steps=8):
    graph = tf.Graph()
    with graph.as_default():
        global_step = v1.train.get_or_create_global_step()
        weight = v1.get_variable("w", initializer=1.0, use_resource=True)
        tf.multiply(tf.identity(weight.read_value(), name="w_value"), 2.0, name="doubled")
        fed = v1.placeholder_with_default(-1.0, shape=[], name="fed")
        tf.identity(fed * 10.0, name="fed_out")
        tf.no_op(name="noop")
        for index in range(70):
            tf.constant(index, name=f"c{index}")
        tf.group(v1.assign_add(weight, 0.0), name="bump_w")
        v1.get_variable("v", initializer=5.0, use_resource=True)
        # Nothing a hook reads moves during a step (a read racing an update may see either value).
        untouched = v1.get_variable("u", initializer=0.0, use_resource=True)
        train_op = tf.group(v1.assign_add(untouched, 1.0), v1.assign_add(global_step, 1))
        hooks = [Requester(REQUESTS[name]) for name in names]
        creator = v1.train.ChiefSessionCreator()
        fetches = caller(graph, train_op)
        returned = []
        session = (
            HookedMonitoredSession(creator, hooks)
            if session_type == "hookrun"
            else v1.train.MonitoredSession(session_creator=creator, hooks=hooks)
        )
        with session:
            for _ in range(steps):
                returned.append(_plain(session.run(fetches)))
            plans = len(session._plans) if session_type == "hookrun" else None
    return returned, [hook.seen for hook in hooks], [hook.options_seen for hook in hooks], plans


CALLERS = {
    "op": lambda g, train_op: train_op,
    "list": lambda g, train_op: [train_op, _g(g, "w_value:0")],
    "dict": lambda g, train_op: {"train": train_op, "w": _g(g, "w_value:0"), "v": _variable("v")},
}


#: Requests the engine runs through a cached plan; the others (feeds, RunOptions, namedtuples) take Session.run.
CACHEABLE = ["nothing", "tensor", "op", "name", "variable", "nested", "every_third"]


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("names", [CACHEABLE, sorted(REQUESTS)], ids=["cached", "merged"])
def test_every_request_kind_gets_what_monitored_session_gives(caller, names):
    expected = _run("tf", names, CALLERS[caller])
    got = _run("hookrun", names, CALLERS[caller])
    assert got[:3] == expected[:3]
    assert (got[3] > 0) == (names == CACHEABLE)  # the cached path was taken, or (feeds, options) it was not


def test_repeated_step_shapes_reuse_one_plan():
    names = ["tensor", "nested", "nothing", "every_third", "variable", "name"]
    returned, seen, _, plans = _run("hookrun", names, CALLERS["op"], steps=9)
    assert plans == 2  # every_third asks for something on steps 3, 6, 9 only
    assert seen == _run("tf", names, CALLERS["op"], steps=9)[1]


def test_more_shapes_than_the_cache_holds_still_run_right():
    """70 shapes, MAX_CALLABLES plans: the rest take Session.run, with the same results."""
    steps = 75
    got = _run("hookrun", ["many_shapes"], CALLERS["op"], steps=steps)
    assert got[3] == engine.MAX_CALLABLES
    assert got[1] == [[step % 70 for step in range(1, steps + 1)]]


def test_a_request_list_changed_in_place_is_seen():
    """The same SessionRunArgs object each step, its list edited between steps: each step fetches what it holds.

    (The engine skips re-keying a step only when the caller and every request are the same objects as the
    last step's and none of them can change: graph elements, names, tuples of them.)
    """

    class Growing(v1.train.SessionRunHook):
        def __init__(self):
            self.names = []
            self.request = None
            self.seen = []

        def before_run(self, run_context):
            graph = v1.get_default_graph()
            if self.request is None:
                self.request = v1.train.SessionRunArgs(self.names)
            self.names.append(graph.get_tensor_by_name(f"c{len(self.names)}:0"))
            return self.request

        def after_run(self, run_context, run_values):
            self.seen.append(list(run_values.results))

    class Frozen(v1.train.SessionRunHook):
        def begin(self):
            graph = v1.get_default_graph()
            self.request = v1.train.SessionRunArgs((graph.get_tensor_by_name("c7:0"), "c8:0"))
            self.seen = []

        def before_run(self, run_context):
            return self.request

        def after_run(self, run_context, run_values):
            self.seen.append(run_values.results)

    graph = tf.Graph()
    with graph.as_default():
        global_step = v1.train.get_or_create_global_step()
        for index in range(10):
            tf.constant(index, name=f"c{index}")
        train_op = v1.assign_add(global_step, 1)
        growing, frozen = Growing(), Frozen()
        with HookedMonitoredSession(v1.train.ChiefSessionCreator(), [growing, frozen]) as session:
            for _ in range(4):
                session.run(train_op)
    assert growing.seen == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    assert frozen.seen == [(7, 8)] * 4
