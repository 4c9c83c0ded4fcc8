"""The ``hookrun`` console script's entry point (``hookrun.cli.app:main``).

It imports only the standard library at first, installs the SIGINT/SIGTERM handlers
(:mod:`hookrun.cli.interrupts`), and only then imports the typer app (:mod:`hookrun.cli.typer_app`:
typer, rich, the commands), so Ctrl-C at any moment, even during those imports, exits 130 with one
line (SIGTERM 143). ``from hookrun.cli.app import app`` still gives the typer app.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point (``hookrun``): run the typer app; a signal exits 128 + its number.

    Raises:
        SystemExit: always (the command's exit code; 130 after SIGINT, 143 after SIGTERM).
    """
    try:
        from hookrun.cli import interrupts

        interrupts.install()
    except KeyboardInterrupt:  # while `signal` itself loaded: Python's default SIGINT handler was still in place
        print("interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
    _safe_streams()
    _show_data_warnings_as_one_line()
    try:
        from hookrun.cli.typer_app import app

        app()
    except SystemExit as done:
        signum = interrupts.signal_of()
        if signum is None or done.code == 128 + signum:
            if signum is not None:
                interrupts.announce(signum)
            raise
        sys.exit(interrupts.announce(signum))
    except BaseException as error:
        signum = interrupts.signal_of(error)
        if signum is None:
            raise
        sys.exit(interrupts.announce(signum))


def _safe_streams() -> None:
    r"""Make ``sys.stdout`` and ``sys.stderr`` print what their encoding cannot hold as escapes.

    ``PYTHONIOENCODING=ascii`` (or an ASCII ``C`` locale, or a surrogate from an undecodable file name) made
    the first ``→`` printed raise ``UnicodeEncodeError`` ("internal error", exit 1) after training had
    finished. With ``errors="backslashreplace"`` it prints as ``\u2192``; the encoding is left as it is.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a text stream Python opened (a test's capture)
            pass


def _show_data_warnings_as_one_line() -> None:
    """Print a ``DataWarning`` once, as ``warning: <message>`` on stderr (no source path); others as Python does."""
    import warnings

    default = warnings.showwarning
    shown: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: object = None,
             line: str | None = None) -> None:
        if category.__name__ == "DataWarning" and category.__module__ == "hookrun.common.errors":
            if str(message) not in shown:  # once, though the sample check and training both read the rows
                shown.add(str(message))
                print(f"warning: {message}", file=file or sys.stderr, flush=True)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def __getattr__(name: str) -> object:
    """``app``: the typer app, imported on first use (so ``main`` can install its handlers first)."""
    if name == "app":
        from hookrun.cli.typer_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
