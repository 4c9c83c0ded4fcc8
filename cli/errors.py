"""Turn hookrun's errors into one line on stderr and a documented exit code."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator

import typer
from rich.console import Console

from hookrun.cli import interrupts
from hookrun.cli.console import EXIT_OUTPUT_CLOSED, discard, reader_gone
from hookrun.cli.exit_codes import EXIT_INVALID, EXIT_TRAINING_FAILED
from hookrun.common.errors import HookrunError
from hookrun.config_schemas.loader import ConfigError


def print_issues(console: Console, error: ConfigError) -> None:
    """Print each config issue on its own line (``file:line:col: error: path: message``)."""
    for issue in error.issues:
        style = "red" if issue.severity == "error" else "yellow"
        console.print(issue.format(), style=style, markup=False, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def reported_errors(console: Console, debug: bool = False) -> Iterator[None]:
    """Map exceptions to a one-line message and exit code; with ``debug`` also print the traceback.

    - :class:`ConfigError`: every issue, exit 2;
    - any other ``HookrunError``: ``error: <message>``, its ``exit_code`` (1 or 2);
    - ``BrokenPipeError`` on standard output or error (``hookrun runs --json | head -1``): the reader
      left; nothing more is printed, exit 141 (128 + SIGPIPE);
    - ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM through :mod:`hookrun.cli.interrupts`), and any
      exception raised after such a signal: ``interrupted`` (``terminated``), exit 130 (143);
    - anything else (a bug in hookrun): ``internal error: ...``, exit 1, and the
      hint to rerun with ``--debug``.

    Raises:
        typer.Exit: always, on an exception.
    """
    try:
        yield
    except typer.Exit:
        raise
    except ConfigError as err:
        if debug:
            console.print_exception()
        print_issues(console, err)
        raise typer.Exit(EXIT_INVALID) from None
    except HookrunError as err:
        if debug:
            console.print_exception()
        console.print(f"error: {err}", style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(err.exit_code) from None
    except KeyboardInterrupt as err:
        raise typer.Exit(interrupts.announce(interrupts.signal_of(err) or signal.SIGINT)) from None
    except BrokenPipeError:
        gone = [stream for stream in (sys.stdout, sys.stderr) if reader_gone(stream)]
        if not gone:  # some other pipe (a user's socket): a failure like any other
            raise
        for stream in gone:  # nothing more to say to a reader that left, and the flush at exit must not fail
            discard(stream)
        raise typer.Exit(EXIT_OUTPUT_CLOSED) from None
    except Exception as err:
        if debug:
            console.print_exception()
        signum = interrupts.signal_of(err)
        if signum is not None:  # a library wrapped the KeyboardInterrupt (pydantic: SchemaError)
            raise typer.Exit(interrupts.announce(signum)) from None
        hint = "" if debug else " (rerun with --debug for the traceback)"
        console.print(
            f"internal error: {type(err).__name__}: {err}{hint}", style="red", markup=False, highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_TRAINING_FAILED) from None
