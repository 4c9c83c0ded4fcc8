"""Measure the start-up window in which Ctrl-C still reaches CPython's own start-up, not hookrun's handler.

Starts ``hookrun validate CONFIG`` (no TensorFlow: the early part of every command) many times and sends
SIGINT after a delay; classifies what each process did:

- ``killed``: the signal came before CPython had installed its handler (the process dies of SIGINT,
  prints nothing: the shell shows exit 130);
- ``cpython``: CPython's own start-up got it (``Fatal Python error: init_import_site`` or a
  ``KeyboardInterrupt`` traceback from ``site``, ``.pth`` files or the console script's import line,
  before hookrun's first line ran): the window this measures;
- ``hookrun``: hookrun's handler got it: one line ``interrupted``, exit 130;
- ``done``: the command had finished.

Prints, per delay, the count of each, and the window: the earliest and latest delay with a ``cpython``
outcome. Measures and never asserts (a loaded machine stretches every delay). See docs/security.md.

    .venv/bin/python benchmarks/sigint_window.py --repeats 5 --step-ms 5 --max-ms 200
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def classify(returncode: int, err: str) -> str:
    """One of ``killed``, ``cpython``, ``hookrun``, ``done`` or ``other:<code>`` (see the module)."""
    if returncode == -signal.SIGINT:
        return "killed"
    if err.startswith("Fatal Python error") or "Traceback" in err or err.startswith("Exception ignored"):
        frames = re.findall(r'File "([^"]+)"', err)
        ours = any(re.search(r"/(cli|runner|config_schemas|hooks)/[^/]+\.py$", f) for f in frames)
        return "hookrun-traceback" if ours else "cpython"
    if returncode == 130 and err.strip().splitlines() == ["interrupted"]:
        return "hookrun"
    if returncode in (0, 2):
        return "done"
    return f"other:{returncode}"


def one(command: list[str], delay: float) -> str:
    """Start ``command``, SIGINT it after ``delay`` s, return the outcome."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return classify(process.returncode, err)


def main() -> None:
    """Run the sweep and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--step-ms", type=float, default=5.0)
    parser.add_argument("--max-ms", type=float, default=150.0)
    parser.add_argument("--config", default=str(ROOT / "configs" / "mtcars_linear.yaml"))
    args = parser.parse_args()
    script = Path(sys.executable).with_name("hookrun")
    command = [str(script) if script.exists() else sys.executable, "validate", args.config]
    if not script.exists():
        command[1:1] = ["-m", "hookrun.cli.app"]
    print(f"command: {' '.join(command)}; load average {os.getloadavg()[0]:.2f}")
    window: list[float] = []
    delay = 0.0
    while delay <= args.max_ms + 1e-9:
        outcomes = Counter(one(command, delay / 1000) for _ in range(args.repeats))
        if outcomes["cpython"]:
            window.append(delay)
        print(f"{delay:6.1f} ms  " + "  ".join(f"{k} {v}" for k, v in sorted(outcomes.items())), flush=True)
        delay += args.step_ms
    span = f"{min(window):.1f}-{max(window):.1f} ms" if window else "none seen"
    print(f"CPython start-up window (a traceback, not hookrun's one line): {span}; "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
