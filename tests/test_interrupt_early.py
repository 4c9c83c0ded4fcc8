"""Ctrl-C (and SIGTERM) at any early moment of ``hookrun train``: one line, exit 130 (143), no traceback.

A real ``hookrun`` process gets the signal at several delays after it starts: while Python starts,
while typer, rich and pydantic are imported and the config models are built, while the config is
checked, while TensorFlow is imported. Each run is stopped long before training, so this is fast.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CONFIGS, REPO

#: Seconds within which a signal may still hit CPython's own start-up on a loaded machine (``site``).
CPYTHON_STARTUP_SECS = 0.2
#: Seconds after the start at which the signal is sent.
DELAYS = (0.03, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1.0, 1.5)


def before_hookrun_code(err: str) -> bool:
    """Whether ``err`` is CPython's report of a Ctrl-C before any line of hookrun's own code ran."""
    if err.startswith("Fatal Python error: init_import_site"):
        return True
    frames = re.findall(r'File "([^"]+)", line \d+', err)
    # "Exception ignored in: <function _get_module_lock.<locals>.cb ...>": the KeyboardInterrupt hit a callback
    # of CPython's import machinery, which swallows it (the process then goes on as if never signalled)
    return err.startswith(("Traceback", "Exception ignored in")) and bool(frames) and not any(
        re.search(r"/(cli|runner|config_schemas|hooks)/[^/]+\.py$", frame) for frame in frames
    )


def hookrun_command() -> list[str]:
    """The ``hookrun`` console script beside this Python, else ``python -m hookrun.cli.app``."""
    script = Path(sys.executable).with_name("hookrun")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hookrun.cli.app"]


@contextlib.contextmanager
def signals_default_in_children() -> Iterator[None]:
    """Children started here get SIGINT and SIGTERM at their default action, as from a terminal.

    A signal ignored here (pytest started by a shell without job control, ``nohup``, ``cmd &``) stays ignored
    across exec, and CPython then installs no KeyboardInterrupt handler: an early Ctrl-C would be lost, which
    is the environment's doing, not hookrun's. A caught signal is reset to its default by exec.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {signum: signal.signal(signum, signal.default_int_handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python


def signalled(tmp_path: Path, signum: int, delay: float) -> tuple[int, str, str]:
    """Start ``hookrun train`` on the mtcars config, send ``signum`` after ``delay`` s; return code, stdout, stderr."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    run_dir = tmp_path / f"run-{signum}-{delay}"
    with signals_default_in_children():
        process = subprocess.Popen(
            [*hookrun_command(), "train", str(CONFIGS / "mtcars_linear.yaml"), "--run-dir", str(run_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
        )
    time.sleep(delay)
    process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"hookrun did not stop within 60 s of signal {signum} at {delay} s: {err[-2000:]}")
    return process.returncode, out, err


@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGINT, 130, "interrupted"),
                                                     (signal.SIGTERM, 143, "terminated")])
def test_a_signal_at_any_early_moment_exits_with_one_line(tmp_path: Path, signum: int, code: int, line: str) -> None:
    delays = DELAYS if signum == signal.SIGINT else DELAYS[::3]
    seen = []
    for delay in delays:
        returncode, out, err = signalled(tmp_path, signum, delay)
        lines = [text for text in err.splitlines() if text.strip()]
        if delay <= CPYTHON_STARTUP_SECS and before_hookrun_code(err):
            continue  # CPython's own start-up (`site`, the console script's import line): not hookrun's to handle
        assert "Traceback" not in out + err and "internal error" not in out + err, (delay, err)
        if returncode == -signum:
            # The signal came before Python had started (the kernel's default action): nothing printed.
            assert lines == [], (delay, err)
        else:
            assert (returncode, lines) == (code, [line]), (delay, out, err)
        seen.append(returncode)
    assert code in seen  # at least one signal reached hookrun's own handling


def test_nothing_but_signal_is_imported_before_the_handlers_are_installed() -> None:
    """Every module imported before ``interrupts.install()`` widens the window in which Ctrl-C reaches
    CPython's own handler (a traceback): ``typing`` and ``threading`` cost 3 ms of it (docs/security.md)."""
    probe = (
        "import sys; before = set(sys.modules)\n"
        "from hookrun.cli.app import main\n"  # the console script's import line
        "from hookrun.cli import interrupts; interrupts.install()\n"  # the first thing main() does
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert loaded <= {"hookrun", "hookrun.cli", "hookrun.cli.app", "hookrun.cli.interrupts", "signal"}, loaded


def test_an_interrupt_wrapped_by_the_import_lock_still_exits_with_one_line() -> None:
    """Inside importlib's module lock Python turns the handler's exception into a SystemError ("returned a result
    with an exception set") caused by it, and reports that as unraisable: it must end the process as the signal."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        from types import SimpleNamespace

        from hookrun.cli import interrupts

        interrupts.install()
        try:
            try:
                raise interrupts.Interrupted(2)
            except interrupts.Interrupted as cause:
                raise SystemError("<built-in function acquire_lock> returned a result with an exception set") from cause
        except SystemError as wrapped:
            sys.unraisablehook(SimpleNamespace(exc_type=SystemError, exc_value=wrapped, exc_traceback=None,
                                               err_msg=None, object=None))
        print("carried on", flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr.strip()) == (130, "", "interrupted")
