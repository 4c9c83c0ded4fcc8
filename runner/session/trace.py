"""The lifecycle trace: every hook method call, timed, to ``<run_dir>/trace.jsonl``, and a per-hook cost summary.

On with ``hookrun train --trace`` or ``session.trace: true``. Each hook is wrapped in a
:class:`TracingHook` that forwards every ``SessionRunHook`` method to it unchanged (``before_run``'s
``SessionRunArgs`` included) and records the call. Off, hooks are not wrapped at all: the trace costs
nothing.

Each line of ``trace.jsonl`` is one call::

    {"position": 0, "hook": "progress_bar", "method": "before_run", "step": 1,
     "time": 1718000000.123456, "duration": 0.000021}

- ``position``: the hook's index in ``hooks:`` (call order); ``hook``: its display name;
- ``method``: ``begin``, ``after_create_session``, ``before_run``, ``after_run`` or ``end``;
- ``step``: for ``before_run``/``after_run`` the step being run (the global step it produces, as in
  ``history.csv``); under ``session.steps_per_run`` the first step of the window, the window's end
  taken from the run's step clock; for ``after_create_session`` and ``end`` the global step at the
  call; null for ``begin`` (no session yet). Steps are counted from the global step read once per
  created session, so the trace adds no ``Session.run`` per step;
- ``time``: wall-clock start (Unix seconds); ``duration``: the call's own time (seconds, >= 0);
- ``error``: present when the call raised: the exception's type name (the exception propagates).

The file is rewritten by each traced run, and written even when training fails (up to the failing call).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import tensorflow as tf

from hookrun.common.files import open_new

#: The trace file inside the run directory.
TRACE_FILE = "trace.jsonl"
#: ``SessionRunHook`` methods in lifecycle order.
METHODS = ("begin", "after_create_session", "before_run", "after_run", "end")
#: Methods called inside the step loop (their time is the hooks' share of it).
STEP_METHODS = ("before_run", "after_run")


@dataclass
class MethodCost:
    """Calls of one method of one hook.

    Attributes:
        calls: number of calls.
        total_seconds: their summed duration (seconds).
    """

    calls: int = 0
    total_seconds: float = 0.0

    @property
    def mean_seconds(self) -> float:
        """Mean duration of a call (seconds; 0 without calls)."""
        return self.total_seconds / self.calls if self.calls else 0.0


@dataclass
class HookCost:
    """All traced calls of one hook.

    Attributes:
        position: index in ``hooks:``.
        hook: display name.
        methods: method name -> its cost, for the methods that were called.
    """

    position: int
    hook: str
    methods: dict[str, MethodCost] = field(default_factory=dict)

    @property
    def step_seconds(self) -> float:
        """Time in ``before_run`` and ``after_run`` (seconds)."""
        return sum(self.methods[m].total_seconds for m in STEP_METHODS if m in self.methods)


@dataclass
class TraceSummary:
    """Per-hook cost of a traced run.

    Attributes:
        hooks: one entry per hook, in position order.
        loop_seconds: wall time of the step loop (seconds), for the hooks' share of it.
        path: the ``trace.jsonl`` written, or None.
    """

    hooks: list[HookCost]
    loop_seconds: float = 0.0
    path: Path | None = None

    def share(self, hook: HookCost) -> float:
        """Fraction of the step loop spent in ``hook``'s ``before_run``/``after_run`` (0 when unknown)."""
        return hook.step_seconds / self.loop_seconds if self.loop_seconds > 0 else 0.0

    def calls(self, method: str) -> int:
        """Calls of ``method`` summed over every hook."""
        return sum(h.methods[method].calls for h in self.hooks if method in h.methods)


def summarize(records: Iterable[dict[str, Any]], loop_seconds: float = 0.0, path: Path | None = None) -> TraceSummary:
    """Aggregate trace records (the dicts of ``trace.jsonl`` lines) per hook and method.

    Args:
        records: trace records with ``position``, ``hook``, ``method`` and ``duration``.
        loop_seconds: wall time of the step loop (seconds), for the share column.
        path: the trace file, kept for display.

    Returns:
        The summary, hooks in position order.
    """
    by_position: dict[int, HookCost] = {}
    for record in records:
        cost = by_position.setdefault(record["position"], HookCost(record["position"], record["hook"]))
        method = cost.methods.setdefault(record["method"], MethodCost())
        method.calls += 1
        method.total_seconds += record["duration"]
    return TraceSummary([by_position[p] for p in sorted(by_position)], loop_seconds, path)


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The records of a ``trace.jsonl`` file, in call order."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class TraceRecorder:
    """Writes trace records to ``trace.jsonl`` and keeps the per-hook totals.

    Args:
        path: the trace file (created or truncated now).
        global_step: the ``global_step`` variable, read once per created session.
        clock: the run's :class:`~hookrun.hooks.step_clock.StepClock`, or None; under
            ``session.steps_per_run`` the end of each window is taken from it (when a hook moved it).

    Example:
        >>> recorder = TraceRecorder(run_dir / TRACE_FILE, built.global_step)
        >>> hooks = recorder.wrap(hooks, names)
        >>> ...  # run the session with ``hooks``
        >>> recorder.close(); summary = recorder.summary(loop_seconds)
    """

    def __init__(self, path: Path, global_step: Any, clock: Any = None) -> None:
        self.path = path
        self._global_step = global_step
        self._clock = clock
        self._file: IO[str] | None = open_new(path)  # never through a symlink planted at `path`
        self._costs: dict[int, HookCost] = {}
        self._last_position = -1
        #: The global step before the current step (updated per session and per completed step).
        self.global_step_value = 0
        #: The step being run (``global_step_value + 1`` during before_run/after_run).
        self.step = 0

    def wrap(self, hooks: Sequence[Any], names: Sequence[str]) -> list[Any]:
        """Wrap each hook in a :class:`TracingHook` (same order, same count).

        Raises:
            ValueError: ``hooks`` and ``names`` differ in length.
        """
        if len(hooks) != len(names):
            raise ValueError(f"{len(hooks)} hooks but {len(names)} names")
        self._last_position = len(hooks) - 1
        for position, name in enumerate(names):
            self._costs[position] = HookCost(position, name)
        pairs = enumerate(zip(hooks, names, strict=True))
        return [TracingHook(hook, name, position, self) for position, (hook, name) in pairs]

    def session_created(self, session: Any) -> None:
        """Read the global step of a (re-)created session."""
        self.global_step_value = int(session.run(self._global_step))
        self.step = self.global_step_value

    def record(
        self, position: int, hook: str, method: str, step: int | None, started: float, duration: float,
        error: str | None = None,
    ) -> None:
        """Write one call and add it to the totals."""
        line: dict[str, Any] = {
            "position": position,
            "hook": hook,
            "method": method,
            "step": step,
            "time": round(started, 6),
            "duration": round(duration, 9),
        }
        if error is not None:
            line["error"] = error
        if self._file is not None:
            self._file.write(json.dumps(line) + "\n")
        method_cost = self._costs[position].methods.setdefault(method, MethodCost())
        method_cost.calls += 1
        method_cost.total_seconds += duration

    def step_after(self, run_context: Any) -> int:
        """The global step after the run of ``run_context``: one more, or a window's end (from the step clock)."""
        clock = self._clock
        if clock is not None and clock.window is not None and clock.advanced_for(run_context):
            return int(clock.step)
        return self.step

    def summary(self, loop_seconds: float = 0.0) -> TraceSummary:
        """The per-hook totals so far."""
        return TraceSummary([self._costs[p] for p in sorted(self._costs)], loop_seconds, self.path)

    def close(self) -> None:
        """Flush and close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None


class TracingHook(tf.compat.v1.train.SessionRunHook):
    """A ``SessionRunHook`` that forwards every method to ``inner`` and records the call.

    Return values are passed through unchanged (``before_run``'s ``SessionRunArgs``, so the
    session hands ``after_run`` the same ``run_values``); exceptions propagate after being recorded.

    Args:
        inner: the wrapped hook.
        name: its display name.
        position: its index in ``hooks:``.
        recorder: where calls go.
    """

    def __init__(self, inner: Any, name: str, position: int, recorder: TraceRecorder) -> None:
        self.inner = inner
        self.name = name
        self.position = position
        self._recorder = recorder

    def __repr__(self) -> str:
        return f"<TracingHook {self.position} {self.name} around {self.inner!r}>"

    def _call(self, method: str, step: int | None, function: Any, *args: Any) -> Any:
        started_wall = time.time()
        started = time.perf_counter()
        try:
            result = function(*args)
        except BaseException as err:
            self._recorder.record(
                self.position, self.name, method, step, started_wall, time.perf_counter() - started,
                type(err).__name__,
            )
            raise
        self._recorder.record(self.position, self.name, method, step, started_wall, time.perf_counter() - started)
        return result

    def begin(self) -> None:
        """Forward ``begin``."""
        self._call("begin", None, self.inner.begin)

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Forward ``after_create_session``; the first hook's call reads the session's global step."""
        if self.position == 0:
            self._recorder.session_created(session)
        step = self._recorder.global_step_value
        self._call("after_create_session", step, self.inner.after_create_session, session, coord)

    def before_run(self, run_context: Any) -> Any:
        """Forward ``before_run`` and return its result unchanged."""
        recorder = self._recorder
        if self.position == 0:
            recorder.step = recorder.global_step_value + 1
        return self._call("before_run", recorder.step, self.inner.before_run, run_context)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Forward ``after_run``; after the last hook's, the step counts as done."""
        recorder = self._recorder
        self._call("after_run", recorder.step, self.inner.after_run, run_context, run_values)
        if self.position == recorder._last_position:
            recorder.global_step_value = recorder.step_after(run_context)

    def end(self, session: Any) -> None:
        """Forward ``end``."""
        self._call("end", self._recorder.global_step_value, self.inner.end, session)
