"""``StepClock``: the ``global_step`` that hookrun's step-driven hooks share, counted in Python.

TensorFlow's timer hooks (``StopAtStepHook``, ``CheckpointSaverHook``,
``SummarySaverHook``, ``StepCounterHook``) each ask for ``global_step`` in
``before_run`` on every step, only to find out, almost always, that they
will not fire. On a small graph that per-step fetch and its Python cost
are most of a step. hookrun's versions of those hooks share one clock
instead, and so do hookrun's own step-driven hooks (``progress_bar``,
``history_saver``, ``evaluation``):

- ``after_create_session``: one exact read of ``global_step`` per session
  (:meth:`StepClock.sync`; the hooks of one run share it);
- every run: the clock adds one, once per run however many hooks ask
  (:meth:`StepClock.advance`), and no hook asks for anything; after the
  first run of each session it checks the count with one exact read;
- when a hook is about to fire: one exact read after the run
  (:meth:`StepClock.confirm`, shared by every hook firing on that run),
  as TensorFlow's hooks re-read ``global_step`` before they fire;
- at ``end``: one exact read (:meth:`StepClock.final`), shared.

Counting is right when every run of the train op adds exactly one to
``global_step``, which is what hookrun's runner builds. When a checking or
confirming read disagrees with the count (a custom train op that moves
``global_step`` differently, another process training the same
variables), the clock logs one warning and switches to *reading*: from
then on each hook asks for ``global_step`` with every step and takes it
as TensorFlow's hooks do (the value read during the step, plus one). On a
cluster the clock reads from the start, since other workers move
``global_step`` too.

Under ``session.steps_per_run: N`` (N > 1, see :mod:`hookrun.hooks.window`) one run trains a window of
up to N steps. The clock is then given the run's :class:`~hookrun.hooks.window.RunWindow`: every hook's
request holds the window's ``global_step`` *after* the run (one scalar per window, exact, shared by
every hook), :meth:`StepClock.advance` takes it as is, :meth:`StepClock.confirm` needs no read, and
:meth:`StepClock.next_step` is the step the coming window reaches. :meth:`StepClock.limit` shortens the
window so a run stops at exactly a step (``stop_at_step``).

This module imports TensorFlow only inside :meth:`StepClock.begin` and :meth:`StepClock.final`.
"""

from __future__ import annotations

from typing import Any

#: The name scope of hookrun's own ops (the input pipeline, the hooks' checks, the clock's read), so
#: TensorBoard's graph view shows the model alone beside one ``hookrun`` box. Ops only: variable names,
#: which checkpoints hold, never change.
HOOKRUN_SCOPE = "hookrun"


class ClockOrderError(RuntimeError):
    """A hook called the clock out of order (a bug in the hook): ``begin`` -> ``sync`` -> ``advance`` -> ``confirm``."""


class StepClock:
    """``global_step`` as the hooks of one run see it: read once per session, then counted.

    One clock is shared by every hook of a run (the runner puts it in
    :attr:`hookrun.hooks.context.HookContext.clock`). A hook calls, from
    its own lifecycle methods:

    - :meth:`begin` from ``begin`` (builds the read tensor, once per graph);
    - :meth:`sync` from ``after_create_session`` (one read per session);
    - :meth:`request` from ``before_run``: None while counting (or its ``tensor``, merged into the hook's own request);
    - :meth:`advance` first thing in ``after_run``: the step just run;
    - :meth:`confirm` before it acts: the exact value, read after the run;
    - :meth:`final` from ``end``: the exact value the run ended at.

    The order is checked: :meth:`sync` before :meth:`begin`, :meth:`advance` before any :meth:`sync`, or
    :meth:`confirm` for a run the clock has not advanced past raise :class:`ClockOrderError`.

    Attributes:
        step: ``global_step`` after the last completed run (steps); before the
            first session, the step the runner restored (``initial_step``).
        reading: read ``global_step`` with every step instead of counting.
        switched: a confirming read disagreed with the count, so the clock reads now.

    Args:
        initial_step: ``global_step`` the run starts from (steps).
        reading: start in reading mode (on a cluster).
        window: with ``session.steps_per_run`` > 1, the fused train op's
            :class:`~hookrun.hooks.window.RunWindow`; None with one step per run.

    Example:
        >>> clock = StepClock()
        >>> class Every100(tf.compat.v1.train.SessionRunHook):
        ...     def begin(self): clock.begin()
        ...     def after_create_session(self, session, coord): clock.sync(session)
        ...     def before_run(self, run_context): return clock.request()
        ...     def after_run(self, run_context, run_values):
        ...         if clock.advance(run_context, run_values.results) % 100 == 0:
        ...             print(clock.confirm(run_context))
    """

    __slots__ = (
        "step",
        "reading",
        "switched",
        "tensor",
        "_request",
        "_session",
        "_advanced",
        "_confirmed",
        "_check_next",
        "_first_check",
        "_settled",
        "_ended",
        "window",
        "_limit",
        "_bound",
    )

    def __init__(self, initial_step: int = 0, reading: bool = False, window: Any = None) -> None:
        self.step = initial_step
        self.window = window
        self._limit: int | None = None  # the earliest step a hook stops at (limit())
        self._bound = self.steps_per_run  # the window length the session's loop runs now
        self.reading = reading or window is not None  # a window: its exact global_step comes with every run
        self.switched = False
        self.tensor: Any = None
        self._request: Any = None
        self._session: Any = None
        self._advanced: Any = None  # the run_context the clock last advanced for
        self._confirmed: Any = None  # the run_context the clock last confirmed for
        self._check_next = False  # confirm after the next run (the first of a session)
        self._first_check = False  # the coming check is a session's first: a mismatch there is not yet a verdict
        self._settled: Any = None  # the session whose step settle() re-read before its first window
        self._ended: tuple[Any, Any] | None = None  # (session, last run) of the last final() read

    def begin(self) -> None:
        """Build the read of ``global_step`` in the default graph (before it is finalized); idempotent.

        Raises:
            RuntimeError: the graph has no ``global_step`` (as TensorFlow's timer hooks raise).
        """
        import tensorflow as tf

        graph = tf.compat.v1.get_default_graph()
        if self.tensor is not None and self.tensor.graph is graph:
            return
        global_step = tf.compat.v1.train.get_global_step(graph)
        if global_step is None:
            raise RuntimeError("Global step should be created to use this hook.")
        # A plain read: TensorFlow's ``_get_or_create_global_step_read`` wraps the value in a
        # ``cond`` on whether the variable is initialized, which costs more than the read.
        self.tensor = tf.identity(global_step, name=f"{HOOKRUN_SCOPE}/global_step_read")
        self._request = tf.compat.v1.train.SessionRunArgs(self.request_tensor)

    @property
    def steps_per_run(self) -> int:
        """Most training steps one run takes: ``session.steps_per_run`` (1 without a window)."""
        return 1 if self.window is None else int(self.window.steps_per_run)

    @property
    def request_tensor(self) -> Any:
        """What a hook adds to its request while the clock reads: the ``global_step`` read, or the window's.

        With a window, the ``global_step`` after the window (exact); else the read during the step
        (:attr:`tensor`), which :meth:`advance` takes plus one, as TensorFlow's hooks do.
        """
        return self.window.global_step if self.window is not None else self.tensor

    def sync(self, session: Any) -> int:
        """Read ``global_step`` exactly, once per session (later calls with the same session return the count).

        Args:
            session: the raw ``tf.compat.v1.Session`` (``after_create_session``'s argument).

        Returns:
            The global step (steps).
        """
        if self.tensor is None:
            raise ClockOrderError("StepClock.sync before StepClock.begin: call clock.begin() from the hook's begin()")
        if session is not self._session:
            self._session = session
            self.step = int(session.run(self.tensor))
            self._advanced = self._confirmed = None
            self._check_next = self._first_check = not self.reading
            self._bound = self.steps_per_run  # a new session's local init resets the loop's bound
            if self.window is not None and self._limit is not None:
                self._apply_bound(session)
        return self.step

    def synced(self, session: Any) -> bool:
        """True if the clock has read ``global_step`` for this session already (:meth:`sync`)."""
        return session is self._session

    def reread(self, session: Any) -> int:
        """Read ``global_step`` exactly now and take it: a hook's ``after_create_session`` may have moved it.

        ``stop_at_step`` with ``num_steps`` calls it from its own ``after_create_session``, as TensorFlow's
        ``StopAtStepHook`` reads ``global_step`` there: an earlier hook (restoring pretrained weights,
        ``global_step`` included) may have moved it since the clock's :meth:`sync`. With a window and a
        :meth:`limit`, the loop's bound is worked out again from the value read.

        Args:
            session: the raw session (``after_create_session``'s, or ``run_context.session``).

        Returns:
            The global step (steps).
        """
        if self.tensor is None:
            raise ClockOrderError("StepClock.reread before StepClock.begin: call clock.begin() from the hook's begin()")
        if session is not self._session:
            return self.sync(session)
        self.step = int(session.run(self.tensor))
        if self.window is not None and self._limit is not None:
            self._apply_bound(session)
        return self.step

    def settle(self, session: Any) -> None:
        """With a window and a :meth:`limit`: re-read ``global_step`` before a session's first window, once.

        The loop's bound for the first window is worked out from the step the clock knows; a hook's
        ``after_create_session`` that ran after the last read may have moved ``global_step`` (pretrained
        weights), and the first window would then run past the limit. One read per session; nothing
        without a window or a limit, or after the session's first call.

        Args:
            session: ``before_run``'s ``run_context.session`` (the raw session).
        """
        if self.window is None or self._limit is None or session is self._settled:
            return
        self._settled = session
        if session is self._session and self._advanced is None:  # no run of this session has finished yet
            self.reread(session)

    def request(self) -> Any:
        """What a hook asks for in ``before_run`` to follow the clock: None while counting.

        Returns:
            None, or (reading) ``SessionRunArgs(global_step read)``; the same object every step.
        """
        return self._request if self.reading else None

    @property
    def next_step(self) -> int:
        """The global step the coming run is expected to reach, for ``before_run`` decisions.

        ``step + 1``; with a window, ``step`` plus the window's length (shorter only where
        :meth:`limit` shortened it, or, unforeseen, where the data ends).
        """
        return self.step + self._bound

    @property
    def last_step(self) -> int | None:
        """The earliest step a hook stops at (:meth:`limit`: ``stop_at_step``'s last step), or None."""
        return self._limit

    def limit(self, session: Any, last_step: int) -> None:
        """Record a step a hook stops at; with a window, make the coming windows end there exactly.

        The earliest limit of every caller holds. When fewer than N steps are left before it, the
        loop's bound is set to what is left (one ``Session.run`` of an assign, once); a run already at
        or past it runs one step, as one step per run would.

        Args:
            session: the raw session (``after_create_session``'s, or ``run_context.session``).
            last_step: the global step to stop at (steps).
        """
        self._limit = last_step if self._limit is None else min(self._limit, last_step)
        if self.window is not None:
            self._apply_bound(session)

    def _apply_bound(self, session: Any) -> None:
        wanted = self.steps_per_run
        if self._limit is not None and self._limit - self.step < wanted:
            wanted = max(1, self._limit - self.step)
        if wanted != self._bound:
            window = self.window
            session.run(window.set_bound, {window.bound_value: wanted})
            self._bound = wanted

    def advance(self, run_context: Any, read: Any = None) -> int:
        """Move the clock past the run that just finished; the first hook to call it for a run moves it.

        After the first run of a session the count is checked with :meth:`confirm` (one read).

        Args:
            run_context: ``after_run``'s ``run_context`` (identifies the run).
            read: while reading, the ``global_step`` value this hook's request fetched during the
                run (with a window: the window's ``global_step`` after the run); None while counting.

        Returns:
            The global step after the run: counted, or, while reading, the value read plus one,
            as TensorFlow's hooks take it; with a window, the value read.
        """
        if self._session is None:
            raise ClockOrderError(
                "StepClock.advance before StepClock.sync: call clock.sync(session) from after_create_session()"
            )
        if run_context is not self._advanced:
            self._advanced = run_context
            if self.window is not None:
                if read is None:
                    raise ClockOrderError(
                        "StepClock.advance without the window's global_step: return clock.request() (or add "
                        "clock.request_tensor to the request) from before_run()"
                    )
                self.step = int(read)
                return self.step
            self.step = int(read) + 1 if read is not None else self.step + 1
            if self._check_next:  # the first run of a session: check that counting holds
                self._check_next = False
                self.confirm(run_context)
        return self.step

    def advanced_for(self, run_context: Any) -> bool:
        """True if the clock was moved past the run of ``run_context`` (a hook called :meth:`advance` for it)."""
        return run_context is self._advanced

    def confirm(self, run_context: Any) -> int:
        """Read ``global_step`` exactly after this run, once per run; correct the clock.

        Called when a hook is about to fire. A count that disagrees with the
        read switches the clock to reading mode (one warning).

        Args:
            run_context: ``after_run``'s ``run_context`` (its ``session`` is the raw session).

        Returns:
            The exact global step (steps).
        """
        if run_context is self._confirmed:
            return self.step
        if run_context is not self._advanced:
            raise ClockOrderError(
                "StepClock.confirm for a run the clock has not advanced past: call clock.advance() first in after_run()"
            )
        if self.window is not None:  # the window's global_step, read after the loop, is exact
            self._confirmed = run_context
            return self.step
        exact = int(run_context.session.run(self.tensor))
        first_check, self._first_check = self._first_check, False
        if not self.reading and exact != self.step and first_check:
            # The first run of a session: a hook's after_create_session that ran after the clock's read
            # (restoring pretrained weights, global_step included) moved global_step, not the train op.
            # Take the exact value and check the count once more, after the next run.
            self._check_next = True
        elif not self.reading and exact != self.step:
            from hookrun.hooks.tf_internals import tf_logging

            tf_logging().warning(
                "global_step is %d where counting one per step gives %d: the train op does not add exactly one "
                "to global_step per run (or a hook assigns global_step in before_run/after_run). hookrun's hooks "
                "now read global_step with every step.",
                exact,
                self.step,
            )
            self.reading = self.switched = True
        self._confirmed = run_context
        self.step = exact
        return exact

    def final(self, session: Any) -> int:
        """Read ``global_step`` exactly at ``end``; one read shared by every hook that asks.

        ``end`` follows the last completed run, or a run that raised end of data (its
        ``after_run`` did not fire, so only a read knows whether it moved ``global_step``).

        Args:
            session: ``end``'s argument (the raw session).

        Returns:
            The exact global step (steps); the last known one if the read fails (on a
            cluster, a parameter server that is gone raises ``tf.errors.OpError``).
        """
        ended = self._ended
        if ended is not None and ended[0] is session and ended[1] is self._advanced:
            return self.step
        import tensorflow as tf

        try:
            self.step = int(session.run(self.tensor))
        except tf.errors.OpError:
            pass  # the read failed (a parameter server is gone): keep the last known step
        self._ended = (session, self._advanced)
        return self.step


class ClockedHook:
    """Mixin for a hook that follows a :class:`StepClock`; put it before the TensorFlow hook it mirrors.

    ``class StepCounterHook(ClockedHook, tf.compat.v1.train.StepCounterHook)`` gets:

    - ``begin``: the base hook's ``begin``, then the clock's read of ``global_step``;
    - ``after_create_session``: the base hook's, then :meth:`StepClock.sync`;
    - ``before_run``: :meth:`StepClock.request` (None while the clock counts).

    The hook's ``after_run`` calls ``self._clock.advance`` first, and ``self._clock.confirm``
    before it acts.

    Args:
        clock: the run's shared step clock.
        **kwargs: the base hook's arguments.
    """

    def __init__(self, clock: StepClock, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._clock = clock

    def begin(self) -> None:
        """The base hook's ``begin``, and the clock's read of ``global_step``."""
        super().begin()  # type: ignore[misc]
        self._clock.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        """The base hook's ``after_create_session``; then sync the clock (one read per session)."""
        super().after_create_session(session, coord)  # type: ignore[misc]
        self._clock.sync(session)

    def before_run(self, run_context: Any) -> Any:
        """Ask for nothing while the clock counts (``global_step`` while it reads)."""
        return self._clock.request()

    def _timer_due(self, run_context: Any, read: Any) -> int | None:
        """For a hook with TensorFlow's ``_timer``: move the clock; the exact step if the timer is due, else None.

        TensorFlow's two-stage check (``CheckpointSaverHook``, ``StepCounterHook``): the timer is
        asked on the counted step, and only then is ``global_step`` read exactly and asked again.

        Args:
            run_context: ``after_run``'s ``run_context``.
            read: ``after_run``'s ``run_values.results`` (the clock's read while it reads, else None).
        """
        timer = self._timer  # type: ignore[attr-defined]
        if timer.should_trigger_for_step(self._clock.advance(run_context, read)):
            global_step = self._clock.confirm(run_context)
            if timer.should_trigger_for_step(global_step):
                return global_step
        return None
