"""The reference TensorFlows: the real Estimators that hookrun.estimator is measured against, built once.

Three virtual environments, each the real thing from the package registry, built into a cache folder
outside the repository (``$HOOKRUN_REFERENCE_DIR``, default ``~/.cache/hookrun/reference``):

========  ==========================================  ==================================================
name      interpreter                                 packages
========  ==========================================  ==================================================
tf115     pyenv's Python 3.7                          ``tensorflow-cpu==1.15.0``, ``numpy==1.18.5``,
                                                      ``protobuf<3.21`` (TF 1.15 itself, boosted trees too)
tf215     Python 3.11                                 ``tensorflow-cpu==2.15.1``,
                                                      ``tensorflow-estimator==2.15.0``
tf28      pyenv's Python 3.10                         ``tensorflow-cpu==2.8.4``, ``tensorflow-estimator==2.8.0``
                                                      (the last Estimator with boosted trees in TF 2.x)
========  ==========================================  ==================================================

Use::

    python tests/reference/envs.py build [NAME ...]   # build (idempotent; a finished env has a stamp)
    python tests/reference/envs.py python NAME        # print the env's interpreter, exit 3 if not built
    python tests/reference/envs.py status             # one line an env

From Python (tests): :func:`reference_python` returns the interpreter of a built env, or ``None``.
Building is serialised by a lock file, so parallel test workers and sessions may call :func:`build` at once.

Exit codes: 0 success; 2 usage (an unknown env name); 3 an env is not built (``python``) or could not be
built (``build``: the pip or venv error is printed, the half-built env removed).
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReferenceEnv:
    """One reference environment: a name, the Python it needs (``major.minor``) and its pinned packages."""

    name: str
    python: str
    packages: tuple[str, ...]
    note: str


ENVS: dict[str, ReferenceEnv] = {
    env.name: env
    for env in (
        ReferenceEnv(
            "tf115",
            "3.7",
            ("tensorflow-cpu==1.15.0", "numpy==1.18.5", "protobuf<3.21", "pandas<1.4"),
            "TF 1.15 itself: tf.estimator as TF 1.x programs knew it, boosted trees included",
        ),
        ReferenceEnv(
            "tf215",
            "3.11",
            ("tensorflow-cpu==2.15.1", "tensorflow-estimator==2.15.0", "pandas<2.2"),
            "TF 2.15: the last tensorflow-estimator, for the TF 2.x names",
        ),
        ReferenceEnv(
            "tf28",
            "3.10",
            ("tensorflow-cpu==2.8.4", "tensorflow-estimator==2.8.0", "protobuf<3.20", "numpy<1.24", "pandas<2.1"),
            "TF 2.8: the last TF 2.x Estimator with boosted trees",
        ),
    )
}


def cache_dir() -> Path:
    """The folder holding the envs: ``$HOOKRUN_REFERENCE_DIR`` or ``~/.cache/hookrun/reference``."""
    return Path(os.environ.get("HOOKRUN_REFERENCE_DIR") or Path.home() / ".cache" / "hookrun" / "reference")


def _stamp(env: ReferenceEnv) -> Path:
    return cache_dir() / env.name / ".built"


def find_interpreter(version: str) -> str | None:
    """A ``pythonX.Y`` for ``version``: this interpreter, one on PATH, or one of pyenv's; ``None`` if none."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    for candidate in sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True):
        return candidate
    found = shutil.which(f"python{version}")
    if found and "shims" not in found:
        return found
    return None


def reference_python(name: str) -> Path | None:
    """The interpreter of the built env ``name``, or ``None`` when it is not built.

    Raises:
        KeyError: ``name`` is not one of :data:`ENVS`.
    """
    env = ENVS[name]
    python = cache_dir() / env.name / "bin" / "python"
    return python if _stamp(env).exists() and python.exists() else None


def build(name: str, *, quiet: bool = True) -> Path:
    """Build env ``name`` unless it is built; return its interpreter.

    Raises:
        KeyError: an unknown name.
        RuntimeError: no interpreter of the env's Python version here, or venv/pip failed (the half-built env
            is removed; the message holds pip's last lines).
    """
    env = ENVS[name]
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = reference_python(name)
        if done is not None:
            return done
        interpreter = find_interpreter(env.python)
        if interpreter is None:
            raise RuntimeError(f"{name}: no Python {env.python} here (pyenv install {env.python} provides one)")
        target = root / env.name
        shutil.rmtree(target, ignore_errors=True)
        try:
            subprocess.run([interpreter, "-m", "venv", str(target)], check=True, capture_output=True, text=True)
            python = target / "bin" / "python"
            pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
            if quiet:
                pip.append("--quiet")
            subprocess.run([*pip, "--upgrade", "pip<24.1"], check=True, capture_output=True, text=True)
            subprocess.run([*pip, *env.packages], check=True, capture_output=quiet, text=True)
            subprocess.run(
                [str(python), "-c", "import tensorflow as tf, tensorflow_estimator; print(tf.__version__)"],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            )
        except subprocess.CalledProcessError as error:
            shutil.rmtree(target, ignore_errors=True)
            tail = "\n".join(((error.stderr or "") + (error.stdout or "")).splitlines()[-15:])
            raise RuntimeError(f"{name}: {' '.join(map(str, error.cmd[:4]))} ... failed:\n{tail}") from None
        _stamp(env).write_text(" ".join(env.packages) + "\n", encoding="utf-8")
        return target / "bin" / "python"


def main(argv: list[str]) -> int:
    """The command line (module docstring); returns the exit code."""
    if not argv or argv[0] not in {"build", "python", "status"}:
        print(__doc__.split("Use::")[1].split("From Python")[0].rstrip(), file=sys.stderr)
        return 2
    command, names = argv[0], argv[1:] or list(ENVS)
    unknown = [n for n in names if n not in ENVS]
    if unknown:
        print(f"envs.py: unknown env {unknown[0]!r}; the envs are: {', '.join(ENVS)}", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        if command == "build":
            try:
                print(f"{name}: {build(name, quiet=True)}")
            except RuntimeError as error:
                print(f"envs.py: {error}", file=sys.stderr)
                status = 3
        elif command == "python":
            python = reference_python(name)
            if python is None:
                print(f"envs.py: {name} is not built (python tests/reference/envs.py build {name})", file=sys.stderr)
                status = 3
            else:
                print(python)
        else:
            python = reference_python(name)
            print(f"{name:6} {'built   ' + str(python) if python else 'missing'}  ({ENVS[name].note})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
