"""Ctrl-C and SIGTERM at any moment of the CLI: one line and exit 130 (143), never a traceback.

:func:`install` is the first thing ``hookrun``'s entry point does, before typer, rich, pydantic or
TensorFlow are imported. From then on SIGINT and SIGTERM raise :class:`Interrupted` (a
``KeyboardInterrupt``, so ``finally`` blocks and context managers still clean up) and are recorded:
an exception that surfaces after a signal (a library may wrap the ``KeyboardInterrupt``, as
pydantic's schema building does in a ``SchemaError``) is reported as the interruption, not as an
internal error. Training replaces these handlers with its own (``runner/session/monitored.py``: finish the
step, save, exit 130/143) and restores them afterwards; it calls the handlers these replaced (a
launcher's), not these.

Imports only the standard library.
"""

from __future__ import annotations

import os
import signal
import sys

#: Imports only what CPython has loaded at start-up anyway (``os``, ``sys``, ``signal``): every
#: millisecond before :func:`install` is a moment in which Ctrl-C reaches CPython, not hookrun
#: (``typing`` and ``threading`` cost 3 ms here; docs/security.md has the window measured).

#: Exit codes by signal, as in ``cli/exit_codes.py``.
_MESSAGES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}

#: The signals received since :func:`install`, in order.
received: list[int] = []
#: Whether the one line about the interruption has been printed.
announced = False
#: Whether :func:`install` ran (the real entry point, not a test's in-process call).
installed = False


class Interrupted(KeyboardInterrupt):
    """Raised by the handlers that :func:`install` sets up.

    Attributes:
        signum: the signal (SIGINT 2, SIGTERM 15).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: The handlers :func:`install` replaced, by signal (a launcher's own, say). Training's handler
#: (``runner/session/monitored.py``) finds them as ``_handle.hookrun_replaced`` and calls them, not ``_handle``.
replaced: dict[int, object] = {}


def _handle(signum: int, frame: object) -> None:
    received.append(signum)
    raise Interrupted(signum)


_handle.hookrun_replaced = replaced  # type: ignore[attr-defined]


_default_unraisable = sys.unraisablehook


def _unraisable(unraisable: object) -> None:
    """An :class:`Interrupted` raised where Python cannot raise it (a weakref callback inside an import).

    Python would print it as ``Exception ignored in ...`` with a traceback and carry on, losing the
    signal; instead the one line is printed and the process exits at once (this happens only before
    training, whose own handlers replace these). Inside the import system's lock Python wraps it: a
    ``SystemError`` ("returned a result with an exception set") whose cause is the :class:`Interrupted`;
    any unraisable error after a signal was received is taken as that signal.
    """
    error = getattr(unraisable, "exc_value", None)
    seen: set[int] = set()
    while error is not None and not isinstance(error, Interrupted) and id(error) not in seen:
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    signum = error.signum if isinstance(error, Interrupted) else (received[0] if received else None)
    if signum is not None:
        code = announce(signum)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    _default_unraisable(unraisable)


def install() -> None:
    """Make SIGINT and SIGTERM raise :class:`Interrupted` and record them (main thread only).

    Also installs ``sys.unraisablehook`` so that an :class:`Interrupted` Python cannot raise (inside a
    weakref callback during an import) still ends the process with the one line.

    A signal the parent process set to be ignored stays ignored, as Python itself does for SIGINT.
    """
    global installed
    sys.unraisablehook = _unraisable
    try:
        for signum in _MESSAGES:
            if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored by the parent (nohup, `cmd &`): keep it so
                replaced[signum] = signal.signal(signum, _handle)
        installed = True
    except ValueError:  # not the main thread (no `threading` import to ask: see above)
        pass


def signal_of(error: BaseException | None = None) -> int | None:
    """The signal behind ``error`` (or behind whatever is being handled), or None.

    An :class:`Interrupted` carries its signal; any other exception counts as caused by a signal
    when one was received since :func:`install` (a plain ``KeyboardInterrupt`` counts as SIGINT).
    """
    if isinstance(error, Interrupted):
        return error.signum
    if received:
        return received[0]
    if isinstance(error, KeyboardInterrupt):
        return signal.SIGINT
    return None


def announce(signum: int) -> int:
    """Print the one line (``interrupted`` / ``terminated``) once, on stderr; return the exit code (128 + signal).

    From then on SIGINT and SIGTERM are ignored while the process exits (a second Ctrl-C must not
    turn the one line into a traceback).
    """
    global announced
    if installed:
        try:
            for other in _MESSAGES:
                signal.signal(other, signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass
    if not (installed and announced):
        announced = True
        try:
            print(_MESSAGES.get(signum, f"stopped by signal {signum}"), file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
    return 128 + signum
