"""Drive the SessionRunHook lifecycle with TensorFlow's ``MonitoredTrainingSession``.

The lifecycle, exactly as TensorFlow documents it:

1. ``begin`` on every hook, in order; then the graph is finalized;
2. ``after_create_session`` (again after a recovered session);
3. ``before_run`` / ``after_run`` around every ``train_op`` run;
4. ``end`` when training finishes: a stop was requested, or the data ended
   (``OutOfRangeError``/``StopIteration``: ``end`` runs, that step's
   ``after_run`` does not; raised by a hook, the same, though the data did
   not end). On any other error neither runs, except a coordinator thread's
   non-recoverable error: the loop stops, ``end`` runs, then closing the
   session raises it.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError, TrainingError
from hookrun.common.files import describe_write_failure
from hookrun.hooks.context import HookFailure


class StopSignals:
    """Turn SIGINT/SIGTERM into a stop at the next step boundary, still calling the handlers already there.

    The handler records the signal; the step loop checks it between steps,
    leaves the loop, and the session closes normally, so every hook's
    ``end`` runs (``checkpoint_saver`` writes a final checkpoint,
    ``history_saver`` records its partial window). A second SIGINT raises
    ``KeyboardInterrupt`` at once. Outside the main thread (where Python
    cannot install handlers) it does nothing.

    Handlers are chained, as under ``MonitoredTrainingSession`` (which
    installs none) a hook's own handler runs: a Python handler present when
    training starts (installed before, or by a hook's constructor) is called
    after the signal is recorded, and so is one a hook installs in ``begin()``
    or ``after_create_session()``: :meth:`adopt`, called once the session is
    created, puts hookrun's handler back in front of it. ``SIG_DFL``,
    ``SIG_IGN``, Python's default SIGINT handler (``KeyboardInterrupt``) and
    the CLI's (``hookrun.cli.interrupts``: exit at once with one line; the
    handler it replaced is chained instead) are not called: hookrun's graceful
    stop replaces them. A chained handler
    that raises (e.g. ``sys.exit``) ends training with its exception, as it
    would without hookrun. A hook's handler that calls the handler it
    replaced (hookrun's) reaches the one hookrun replaced, as it would
    without hookrun.

    Attributes:
        signum: the first signal received, or None.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}
        self._chained: dict[int, object] = {}
        self._handling = False

    def _handle(self, signum: int, frame: object) -> None:
        if self._handling:  # a hook's handler calling the one it replaced (ours): call the one ours replaced
            _call(_underlying(self._previous.get(signum), signum), signum, frame)
            return
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self.signum is None:
            self.signum = signum
        self._handling = True
        try:
            _call(self._chained.get(signum), signum, frame)
        finally:
            self._handling = False

    def request(self, signum: int) -> None:
        """Stop at the next step boundary as if ``signum`` had arrived (no handler is chained)."""
        if self.signum is None:
            self.signum = signum

    def __enter__(self) -> StopSignals:
        _ACTIVE.append(self)
        if _PENDING:  # asked before training started (the reader left during start-up)
            self.request(_PENDING.pop())
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
                self._chained[sig] = _underlying(self._previous[sig], sig)
        return self

    def adopt(self) -> None:
        """Chain to a handler a hook installed in ``begin``/``after_create_session``, and reinstall ours in front."""
        for sig in self._previous:
            current = signal.getsignal(sig)
            if current != self._handle:
                self._chained[sig] = _underlying(current, sig)
                signal.signal(sig, self._handle)

    def __exit__(self, *exc: object) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()
        self._chained.clear()


#: The :class:`StopSignals` of the step loops running now (one, but for a test's nested run).
_ACTIVE: list[StopSignals] = []
#: A stop asked for while no step loop ran: the next one stops before its first step.
_PENDING: list[int] = []


def request_stop(signum: int) -> None:
    """End training gracefully, as the signal ``signum`` would: at the next step boundary, every hook's ``end``.

    For a stop that is no real signal: standard output was closed (``hookrun train | head``; the CLI's
    console calls this with ``SIGPIPE`` instead of exiting). While no step loop runs (before training
    starts), the next one stops before its first step. Safe from any thread.

    Args:
        signum: the signal to report (``LoopResult.signal``; the CLI exits ``128 + signum``).
    """
    if _ACTIVE:
        _ACTIVE[-1].request(signum)
    elif not _PENDING:
        _PENDING.append(signum)


def _underlying(handler: object, signum: int) -> object:
    """The handler to chain to: ``handler``, or for the CLI's own (``hookrun.cli.interrupts``), the one it replaced.

    The CLI's handler turns a signal before training into a one-line exit; during training
    hookrun's graceful stop replaces it, so what it had replaced (a launcher's handler) is chained.
    """
    replaced = getattr(handler, "hookrun_replaced", None)
    return replaced.get(signum) if isinstance(replaced, dict) else handler


def _call(handler: object, signum: int, frame: object) -> None:
    """Call a Python signal handler; skip ``SIG_DFL``, ``SIG_IGN``, None and Python's SIGINT default."""
    if callable(handler) and handler is not signal.default_int_handler:
        handler(signum, frame)


@dataclass
class LoopResult:
    """What the step loop did.

    Attributes:
        steps: training steps that completed in this process (steps; under ``session.steps_per_run``
            the sum of the steps each window ran).
        loop_seconds: wall time of the step loop, from the session being ready to the last step's
            end; the hooks' ``end`` and the session's close are not in it (seconds).
        end_of_data: the loop ended because the input ran out.
        signal: the signal (SIGINT 2, SIGTERM 15) that stopped the loop, or None.
        end_seconds: wall time from the loop's end to the session closed: every hook's ``end``
            (e.g. the final checkpoint) and the session's close (seconds).
        final_global_step: ``global_step`` read when the loop ended, before ``end``; None if
            unreadable. After a recovered session this differs from ``initial_step + steps``
            (the steps since the restored checkpoint ran again).
        start_global_step: ``global_step`` read when the loop started, after every hook's
            ``after_create_session`` (a hook restoring pretrained weights may have moved it from the
            restored step); None if unreadable.
        stop_reason: why the loop ended, for the end-of-run line: ``end of data``, ``last_step N
            reached``, ``stop requested by a hook``, ``hooks[1] (custom).after_run() raised
            StopIteration``, or, after a signal, ``signal N``.
    """

    steps: int
    loop_seconds: float
    end_of_data: bool
    signal: int | None = None
    final_global_step: int | None = None
    end_seconds: float = 0.0
    start_global_step: int | None = None
    stop_reason: str = "stop requested by a hook"


#: Hook methods called outside the step loop, whose failures are named by hook and method.
_OUTSIDE_LOOP_METHODS = ("begin", "after_create_session", "end")


def _code_of(method: Any) -> Any:
    """The code object a hook's method runs (a bound method's function, a plain function's own), or None."""
    function = getattr(method, "__func__", method)
    return getattr(function, "__code__", None)


#: Hook methods called around each step (each window under ``session.steps_per_run``).
_LOOP_METHODS = ("before_run", "after_run")


def _hook_call(
    err: BaseException, hooks: list[Any], labels: list[str] | None, methods: tuple[str, ...]
) -> tuple[str, str] | None:
    """``("hooks[2] (custom)", "begin")`` if ``err`` was raised inside one of the hooks' ``methods``, else None.

    Found from the traceback, outermost frame first: a frame running the code of one of the hooks'
    methods (a class's method, or a ``FunctionHook``'s function), with that hook as ``self`` when
    the frame has one. No wrapper is put around the hooks, so this costs nothing until a failure.
    """
    codes: dict[Any, list[tuple[int, str, Any]]] = {}
    for index, hook in enumerate(hooks):
        for method in methods:
            code = _code_of(getattr(hook, method, None))
            if code is not None:
                codes.setdefault(code, []).append((index, method, hook))
    tb = err.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        for index, method, hook in codes.get(frame.f_code, ()):
            if frame.f_locals.get("self", hook) is hook:
                label = labels[index] if labels is not None else f"hooks[{index}] ({type(hook).__name__})"
                return label, method
        tb = tb.tb_next
    return None


#: What to do when the run directory's checkpoint lacks a variable the graph now makes (appended to the error).
RESUME_MISFIT_FIX = (
    "the graph makes a variable this checkpoint lacks (graph.builder, graph.params, session.mixed_precision or a "
    "hook changed since it was "
    "written): undo the change, train into a new --run-dir, or start one from this run's weights with "
    "graph.warm_start"
)


def _failed_hook_call(err: BaseException, hooks: list[Any], labels: list[str] | None) -> str | None:
    """``"hooks[2] (custom).begin()"`` if ``err`` was raised in a hook's ``begin``/``after_create_session``/``end``."""
    found = _hook_call(err, hooks, labels, _OUTSIDE_LOOP_METHODS)
    return None if found is None else f"{found[0]}.{found[1]}()"


@dataclass(frozen=True)
class FailedRun:
    """Where in the step loop a run (a step, or a window of ``session.steps_per_run`` steps) failed.

    Attributes:
        before: ``global_step`` before the failed run (the loop's start step plus the steps run since;
            steps).
        after: ``global_step`` read once the run had failed, or None if unreadable (steps).
        length: the most steps the run could take: 1, or the window's length (``session.steps_per_run``,
            shorter where ``stop_at_step`` shortened it).
        steps_per_run: ``session.steps_per_run``.
    """

    before: int
    after: int | None
    length: int
    steps_per_run: int

    def describe(self, err: BaseException, hooks: list[Any], labels: list[str] | None) -> str:
        """``at step 7``, ``in hooks[1] (custom).after_run() after the window of steps 6-10``, ``at steps 6-10``.

        A hook's ``before_run`` failed before the run; its ``after_run`` after it (the steps ran: up to
        the step read). An error of the session call itself is at the step after the last one whose
        update went through (``global_step`` moves with each step's update, inside a window too); when
        that cannot be told apart from an error outside the loop's steps, the window's range is named.
        """
        first, last = self.before + 1, self.before + self.length
        windowed = self.steps_per_run > 1
        found = _hook_call(err, hooks, labels, _LOOP_METHODS)
        if found is not None:
            call = f"{found[0]}.{found[1]}()"
            if found[1] == "before_run":
                return f"in {call} before the window of steps {first}-{last}" if windowed else (
                    f"in {call} before step {first}"
                )
            ended = self.after if self.after is not None and self.after >= first else None
            if not windowed:
                return f"in {call} after step {ended if ended is not None else first}"
            return f"in {call} after the window of steps {first}-{ended}" if ended is not None else (
                f"in {call} after the window of steps {first}-{last}"
            )
        if not windowed:
            return f"at step {first}"
        if self.after is not None and first <= self.after < last:
            return f"at step {self.after + 1} (in the window of steps {first}-{last})"
        return f"at steps {first}-{last}"


def _in_restore(err: BaseException) -> bool:
    """True if ``err`` was raised while ``SessionManager`` restored a checkpoint."""
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_restore_checkpoint":
            return True
        tb = tb.tb_next
    return False


def _where(
    err: BaseException,
    phase: str,
    final_global_step: int | None,
    done: int,
    hooks: list[Any],
    labels: list[str] | None,
    checkpoint_dir: Path,
    tf: Any,
    failed: FailedRun | None = None,
) -> str:
    """Where a failure happened, for its message.

    In a step: ``at step N`` (or the hook's ``before_run``/``after_run`` and the step, or under
    ``session.steps_per_run`` the window's steps: :meth:`FailedRun.describe`). Outside the step loop:
    in which hook's ``begin()``, ``after_create_session()`` or ``end()``, else while restoring the latest
    checkpoint, creating the session, or closing it.

    Args:
        err: the exception.
        phase: ``"start"`` (before the first step: hooks' ``begin``, session creation and
            restore, ``after_create_session``), ``"loop"`` or ``"finish"`` (after the last step).
        final_global_step: ``global_step`` when the loop ended, or None.
        done: the global step of the last completed step.
        hooks: the hooks, as the session calls them.
        labels: their names for messages (``hooks[2] (custom)``), or None.
        checkpoint_dir: the run directory (for the checkpoint restored).
        tf: the ``tensorflow`` module.
        failed: in the loop phase, the run that failed, or None.
    """
    hook_call = _failed_hook_call(err, hooks, labels)
    after = f"after step {final_global_step if final_global_step is not None else done}"
    if hook_call is not None:
        if phase == "finish":
            return f"in {hook_call} {after}"
        if phase == "start":
            return f"in {hook_call} before the first step"
        return f"in {hook_call} at step {done + 1} (a recovered session)"
    if _in_restore(err):
        latest = tf.train.latest_checkpoint(str(checkpoint_dir))
        return f"while restoring checkpoint {latest or checkpoint_dir} (before the first step)"
    if phase == "start":
        return "while creating the session (before the first step)"
    if phase == "finish":
        return f"while closing the session {after}"
    if failed is not None:
        return failed.describe(err, hooks, labels)
    return f"at step {done + 1}"


def _op_error_line(message: str) -> str:
    """The telling line of a TensorFlow op error: not ``Graph execution error:`` and its node trace.

    TensorFlow 2's graph errors read ``Graph execution error:``, ``Detected at node ...``, a
    Python stack, ``Node: ...``, then the error itself (``assertion failed: [...]``). Several errors at once
    (``2 root error(s) found.``, each tower's, say) give the first one's line, ``(0) INVALID_ARGUMENT: ...``.
    """
    lines = message.strip().splitlines()
    skipped = ("Graph execution error", "Detected at node", "Node:", "[[")
    for index, line in enumerate(lines):
        if re.match(r"\d+ root error\(s\) found", line):  # several: the first one's own line, "  (0) CODE: ..."
            first = next((rest.strip() for rest in lines[index + 1:] if rest.strip().startswith("(0)")), "")
            if first:
                return re.sub(r"^\(0\) [A-Z_]+: ", "", first)
        if line.strip() and not line[0].isspace() and not line.startswith(skipped):
            return line.strip()
    return lines[0].strip() if lines else ""


def _raiser(err: BaseException, hooks: list[Any]) -> str:
    """``the hook Type `` for the innermost of ``hooks`` whose method is in ``err``'s traceback, else ``a hook ``."""
    found = "a hook "
    inner = {id(getattr(hook, "inner", hook)) for hook in hooks} | {id(hook) for hook in hooks}
    tb = err.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None and id(owner) in inner and not type(owner).__name__ == "TracingHook":
            found = f"the hook {type(owner).__name__} "
        tb = tb.tb_next
    return found


def _failed_run(
    tf: Any, session: Any, start: int, steps: int, steps_per_run: int, window_bound: Any
) -> FailedRun:
    """The run that just failed: ``global_step`` before it (``start + steps``), read after it, and its length.

    Reads ``global_step`` (and with a window, its ``bound``) on the raw session, which is still open:
    the failure is being raised through the session's ``__exit__``. A value that cannot be read is None
    (``after``) or ``steps_per_run`` (the length).
    """
    after = _read_global_step(tf, session)
    length = steps_per_run
    if steps_per_run > 1 and window_bound is not None:
        try:
            length = int(session.run_step_fn(lambda step_context: step_context.session.run(window_bound)))
        except (tf.errors.OpError, RuntimeError, ValueError, TypeError):
            length = steps_per_run
        length = min(max(length, 1), steps_per_run)
    return FailedRun(before=start + steps, after=after, length=length, steps_per_run=steps_per_run)


def _stop_reason(tf: Any, hooks: list[Any], final_global_step: int | None) -> str:
    """Why the loop left on ``should_stop``: ``last_step N reached`` (a stop-at-step hook's), else a hook's request.

    A stop-at-step hook (hookrun's ``stop_at_step``, or TensorFlow's ``StopAtStepHook`` from a model_fn's
    ``training_hooks``; both keep their last step as ``_last_step``, which the runner reads without naming
    either class) whose last step ``global_step`` has reached stopped the run; any other stop was
    a hook's ``run_context.request_stop()`` (``early_stopping``, a checkpoint listener, a custom hook)
    or the coordinator's.
    """
    if final_global_step is not None:
        for hook in hooks:
            hook = getattr(hook, "inner", hook)  # the lifecycle trace's wrapper
            last_step = getattr(hook, "_last_step", None)
            if isinstance(last_step, int) and final_global_step >= last_step:
                return f"last_step {int(last_step)} reached"
    return "stop requested by a hook"


def _read_global_step(tf: Any, session: Any) -> int | None:
    """``global_step`` of the default graph, read on the raw session (no hook sees it); None if unreadable."""
    global_step = tf.compat.v1.train.get_global_step()
    if global_step is None:
        return None
    try:
        return int(session.run_step_fn(lambda step_context: step_context.session.run(global_step)))
    except (tf.errors.OpError, RuntimeError, ValueError, TypeError):
        return None


def _open_session(tf: Any, engine: str, hooks: list[Any], scaffold: Any, checkpoint_dir: Path, config: Any) -> Any:
    """The monitored session for ``engine``; it restores the latest checkpoint in ``checkpoint_dir``."""
    if engine == "tf":
        return tf.compat.v1.train.MonitoredTrainingSession(
            checkpoint_dir=str(checkpoint_dir),
            scaffold=scaffold,
            hooks=hooks,
            config=config,
            save_checkpoint_secs=None,
            save_checkpoint_steps=None,
            save_summaries_steps=None,
            save_summaries_secs=None,
            log_step_count_steps=None,
        )
    if engine != "hookrun":
        raise ValueError(f"unknown session engine {engine!r}")
    from hookrun.runner.session.engine import HookedMonitoredSession

    creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold, checkpoint_dir=str(checkpoint_dir), config=config
    )
    return HookedMonitoredSession(creator, hooks)


def run_monitored(
    tf: Any,
    train_op: Any,
    hooks: list[Any],
    scaffold: Any,
    checkpoint_dir: Path,
    session_config: Any,
    initial_step: int,
    engine: str = "hookrun",
    session_factory: Any = None,
    hook_labels: list[str] | None = None,
    steps_per_run: int = 1,
    window_bound: Any = None,
) -> LoopResult:
    """Run ``train_op`` under a monitored session until it should stop.

    ``engine`` picks the session: ``hookrun`` (:class:`hookrun.runner.session.engine.HookedMonitoredSession`
    with a ``ChiefSessionCreator``: TensorFlow's creation, restore and recovery, hookrun's
    per-step dispatch) or ``tf`` (``tf.compat.v1.train.MonitoredTrainingSession``).

    Only the given hooks run, in order: the session's own checkpoint,
    summary and step-counter hooks are switched off
    (``save_checkpoint_secs/steps``, ``save_summaries_steps/secs`` and
    ``log_step_count_steps`` set to None). ``checkpoint_dir`` is where the
    session restores from, so re-running resumes. SIGINT/SIGTERM stop the
    loop at the next step boundary and close the session normally (see
    :class:`StopSignals`).

    Args:
        tf: the ``tensorflow`` module.
        train_op: one training step.
        hooks: ``SessionRunHook`` instances, in call order.
        scaffold: the ``Scaffold`` (its saver restores the latest checkpoint).
        checkpoint_dir: the run directory.
        session_config: a ``tf.compat.v1.ConfigProto``.
        initial_step: ``global_step`` at the start, for error messages (steps).
        engine: ``hookrun`` or ``tf`` (see above).
        session_factory: a callable returning the monitored session to use instead (on a cluster:
            TensorFlow's ``MonitoredSession`` with the chief's or a worker's session creator; see
            :mod:`hookrun.runner.cluster.session`); ``engine`` is then ignored.
        hook_labels: a name per hook for error messages (``hooks[2] (custom)``), or None.
        steps_per_run: ``session.steps_per_run``; above 1, ``train_op`` is the fused loop's ``steps``
            tensor (:mod:`hookrun.runner.graph.fused`) and each run adds the steps it returns. A
            signal stops the loop after the current window.
        window_bound: with ``steps_per_run`` > 1, the fused loop's ``bound`` variable (the window's
            length, :attr:`hookrun.hooks.window.RunWindow.bound`), read only when a window fails, to
            name its steps; None otherwise.

    Returns:
        The loop's result.

    Raises:
        TrainingError: NaN loss (``NanLossDuringTrainingError``), a TensorFlow
            op error, or a hook's exception; the message says where: the global step of a
            failed step, or, outside the step loop, the hook and method (``begin()``,
            ``after_create_session()``, ``end()``), the checkpoint being restored, or the
            session's creation or close.
            The original exception is chained (``__cause__``) for ``--debug``.
    """
    steps = 0
    started = loop_ended = time.perf_counter()
    end_of_data = False
    final_global_step: int | None = None
    start_global_step: int | None = None
    stop_reason = "stop requested by a hook"
    failed: FailedRun | None = None
    phase = "start"  # "start": begin, session creation, restore, after_create_session; "loop"; "finish": end
    stop = StopSignals()
    try:
        open_session = session_factory or (
            lambda: _open_session(tf, engine, hooks, scaffold, checkpoint_dir, session_config)
        )
        with stop, open_session() as session:
            stop.adopt()  # handlers the hooks installed in begin/after_create_session: chained
            phase = "loop"
            # after every hook's after_create_session: a hook may have moved it from the restored step
            start_global_step = _read_global_step(tf, session)
            started = time.perf_counter()
            try:
                if steps_per_run > 1:  # each run is a window of up to N steps; it returns how many it ran
                    while not session.should_stop() and stop.signum is None:
                        steps += int(session.run(train_op))
                else:
                    while not session.should_stop() and stop.signum is None:
                        session.run(train_op)
                        steps += 1
            except (tf.errors.OutOfRangeError, StopIteration) as err:
                loop_ended = time.perf_counter()
                phase = "finish"
                final_global_step = _read_global_step(tf, session)
                raised = _hook_call(err, hooks, hook_labels, _LOOP_METHODS)
                if raised is None:  # the input ran out (the session call raised it)
                    end_of_data, stop_reason = True, "end of data"
                else:  # a hook raised it: TensorFlow ends the run as at the data's end, but the data did not end
                    stop_reason = f"{raised[0]}.{raised[1]}() raised {type(err).__name__}"
                    if raised[1] == "after_run":  # the step (the window) ran before its after_run raised
                        before = (start_global_step if start_global_step is not None else initial_step) + steps
                        ran = final_global_step - before if final_global_step is not None else 1
                        steps += min(max(ran, 1), steps_per_run)
                raise  # the session's __exit__ swallows it and still calls every hook's end()
            except Exception:
                start = start_global_step if start_global_step is not None else initial_step
                if session_factory is None:
                    failed = _failed_run(tf, session, start, steps, steps_per_run, window_bound)
                else:  # on a cluster no read after a failure: a gone parameter server would make it recover
                    failed = FailedRun(start + steps, None, steps_per_run, steps_per_run)
                raise
            loop_ended = time.perf_counter()
            phase = "finish"
            final_global_step = _read_global_step(tf, session)
            if stop.signum is not None:
                stop_reason = f"signal {stop.signum}"
            else:
                stop_reason = _stop_reason(tf, hooks, final_global_step)
    except tf.compat.v1.train.NanLossDuringTrainingError as err:
        latest = tf.train.latest_checkpoint(str(checkpoint_dir))
        if getattr(err, "first_step", None) is not None:  # a window of session.steps_per_run steps
            raise TrainingError(
                f"non-finite loss in the window of steps {err.first_step}-{err.last_step} (session.steps_per_run: "
                f"{steps_per_run}); last good checkpoint: {latest or 'none'}"
            ) from err
        step = failed.before + 1 if failed is not None else initial_step + steps + 1
        raise TrainingError(f"NaN loss at step {step}; last good checkpoint: {latest or 'none'}") from err
    except tf.errors.OpError as err:
        where = _where(
            err, phase, final_global_step, initial_step + steps, hooks, hook_labels, checkpoint_dir, tf, failed
        )
        write_failure = describe_write_failure(err)
        if write_failure:
            raise TrainingError(f"{write_failure} ({where})") from err
        message = _op_error_line(err.message or str(err))
        if _in_restore(err):  # Saver.restore's wrapper ends "Original error:"; the key comes after its trace
            from hookrun.runner.run_dir.checkpoints import restore_error_line

            message = restore_error_line(err.message or str(err))
            if isinstance(err, tf.errors.NotFoundError) and "not found in checkpoint" in message:
                message += f"; {RESUME_MISFIT_FIX}"
        raise TrainingError(f"TensorFlow error {where}: {type(err).__name__}: {message}") from err
    except KeyboardInterrupt:
        raise
    except SystemExit as err:  # a hook called sys.exit(): that hook failed, it does not end the run well
        where = _where(
            err, phase, final_global_step, initial_step + steps, hooks, hook_labels, checkpoint_dir, tf, failed
        )
        raise TrainingError(f"training failed {where}: {_raiser(err, hooks)}called sys.exit({err.code!r})") from err
    except Exception as err:
        if isinstance(err, HookFailure):  # complete as it is (e.g. a checkpoint refused for NaN weights)
            if getattr(err, "exit_code", 1) == 2:  # refused before the first step (a custom hook under steps_per_run)
                raise SetupError(str(err)) from err
            raise TrainingError(str(err)) from err
        where = _where(
            err, phase, final_global_step, initial_step + steps, hooks, hook_labels, checkpoint_dir, tf, failed
        )
        write_failure = describe_write_failure(err)
        if write_failure:
            raise TrainingError(f"{write_failure} ({where})") from err
        message = (str(err).strip().splitlines() or [""])[0]
        raise TrainingError(f"training failed {where}: {type(err).__name__}: {message}") from err
    closed = time.perf_counter()
    return LoopResult(
        steps=steps,
        loop_seconds=loop_ended - started,
        end_seconds=closed - loop_ended,
        end_of_data=end_of_data,
        signal=stop.signum,
        final_global_step=final_global_step,
        start_global_step=start_global_step,
        stop_reason=stop_reason,
    )
