"""The consoles hookrun prints to: a closed pipe is the reader leaving, not a failure (no TensorFlow).

``hookrun train ... | head -c 1``: once ``head`` exits, every write to standard output fails with
``EPIPE`` (Python ignores ``SIGPIPE``, so the process is not killed as a C program would be). rich's
``Console`` then raises ``SystemExit(1)`` from whatever printed, a hook in the middle of a step, which
ended training as a failed hook. :class:`OutputConsole` instead drops what it prints from then on
(the stream is pointed at ``/dev/null``) and asks training to stop gracefully, as a signal does
(:func:`hookrun.runner.session.monitored.request_stop` with ``SIGPIPE``): the current step finishes,
every hook's ``end`` runs (``checkpoint_saver`` saves), and ``train`` exits 141 (128 + ``SIGPIPE``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from typing import IO, Any

from rich.console import Console

from hookrun.cli.exit_codes import EXIT_OUTPUT_CLOSED

__all__ = ["EXIT_OUTPUT_CLOSED", "OutputConsole", "discard", "reader_gone"]


def discard(stream: IO[Any] | None) -> None:
    """Point ``stream``'s file descriptor at ``/dev/null``, so later writes and the flush at exit succeed."""
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


def reader_gone(stream: IO[Any] | None) -> bool:
    """Whether ``stream`` is a pipe (or socket) whose reading end is closed (``poll`` reports ``POLLERR``)."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)  # type: ignore[union-attr]
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


class OutputConsole(Console):
    """A ``rich`` console whose closed output ends training gracefully instead of raising ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        """The reader left: print nothing more and stop training at the next step boundary (see the module)."""
        self.quiet = True
        discard(self.file)
        from hookrun.runner.session.monitored import request_stop

        request_stop(signal.SIGPIPE)
