"""Import TensorFlow lazily, quietly, and route its log lines through rich.

:func:`import_tensorflow` is the first import of TensorFlow in a run: it sets TensorFlow's
environment (quiet C++ logs, no oneDNN notice) before the import. Other modules do import
TensorFlow at module level: the session engine (``runner/session/engine.py``), the scaffold, the
trace and the cluster session, the built-in graph builders and every hook's ``hook.py``. They are
imported only after :func:`import_tensorflow` has run (the trainer and the cluster servers call it
first; the registry imports a hook's ``hook.py`` only when that hook is built), so the CLI's
``validate``, ``list-hooks`` and ``--help`` load no TensorFlow and stay fast (``import tensorflow``
costs 2-4 s; ``tests/test_startup.py``).

It also sets ``TF_USE_LEGACY_KERAS=1`` unless the user set it: ``tf.keras`` is then the ``tf-keras``
package (Keras 2, a dependency of hookrun), on which ``tf.compat.v1.layers``,
``tf.compat.v1.feature_column.input_layer``/``linear_model`` work in graph mode as they did under
``tf.estimator``. Keras 3 (``import keras``) stays importable; its layers keep their weights outside
the v1 collections, so a model_fn using them is refused (:mod:`hookrun.runner.graph.keras_check`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from rich.text import Text

from hookrun.common.errors import SetupError
from hookrun.hooks import tf_internals

#: TensorFlow's hooks module: its warnings explain why a run stopped, so they always get through; as do
#: the warnings of hookrun's own hooks (``nan_tensor`` stopping on a NaN loss, the step clock switching to reads).
_HOOKS_MODULE = "basic_session_run_hooks"

#: TensorFlow's switch to Keras 2 (the ``tf-keras`` package) as ``tf.keras``; read when ``tf.keras`` is first used.
LEGACY_KERAS = "TF_USE_LEGACY_KERAS"


def import_tensorflow(verbose: bool = False) -> ModuleType:
    """Import and return ``tensorflow``, silencing its start-up noise.

    Sets ``TF_CPP_MIN_LOG_LEVEL=2`` (``0`` when ``verbose``),
    ``TF_ENABLE_ONEDNN_OPTS=0`` and ``TF_USE_LEGACY_KERAS=1`` (``tf.keras`` is tf-keras, Keras 2, so
    ``tf.compat.v1.layers`` work) before the first import unless the user set
    them already. Later calls return the cached module.

    Args:
        verbose: keep TensorFlow's C++ INFO logs.

    Returns:
        The ``tensorflow`` module.

    Raises:
        SetupError: no usable temporary directory (exit 2; see :func:`check_temporary_directory`).
    """
    check_temporary_directory()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0" if verbose else "2")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault(LEGACY_KERAS, "1")
    if "tensorflow" in sys.modules or verbose:
        import tensorflow as tf

        return tf
    with native_noise_filtered():
        import tensorflow as tf

        tf.config.list_physical_devices()  # CUDA's cuInit, and its error on a machine without a GPU driver: here
    return tf


#: What TensorFlow's CUDA build writes to file descriptor 2 while it loads on a machine without a GPU driver,
#: before ``TF_CPP_MIN_LOG_LEVEL`` takes effect (absl logs to stderr until it is initialised).
NATIVE_NOISE = (
    b"All log messages before absl::InitializeLog() is called are written to STDERR",
    b"cudart_stub.cc",
    b"cuda_platform.cc",
    b"failed call to cuInit",
    b"oneDNN custom operations are on",
)


@contextlib.contextmanager
def native_noise_filtered() -> Iterator[None]:
    """Hold back :data:`NATIVE_NOISE` lines written to file descriptor 2 (by C++ code) inside the block.

    TensorFlow's CUDA build (the ``tensorflow`` wheel, a dependency since tf-keras needs it) logs "Could not
    find cuda drivers" and "failed call to cuInit" on a machine without a GPU driver, through absl before
    ``TF_CPP_MIN_LOG_LEVEL`` applies. Everything written to descriptor 2 inside the block goes to a
    temporary file and, at the block's end (an exception included), every other line is written back to
    descriptor 2 in order. Where no temporary file can be made, nothing is held back.
    """
    try:
        sys.stderr.flush()
        held = tempfile.TemporaryFile()
    except OSError:
        yield
        return
    saved = os.dup(2)
    try:
        os.dup2(held.fileno(), 2)
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)
        os.close(saved)
        held.seek(0)
        kept = [line for line in held.read().splitlines(keepends=True) if not any(n in line for n in NATIVE_NOISE)]
        held.close()
        if kept:
            try:
                os.write(2, b"".join(kept))
            except OSError:
                pass


def check_temporary_directory() -> str:
    """The temporary directory (``tempfile.gettempdir()``), which TensorFlow's import needs.

    ``import tensorflow`` asks for it (absl's test utilities, at import), so where no candidate can
    take a small file (every one full or read-only, or a file-size limit of 0: ``ulimit -f 0``) the
    import itself failed with "No usable temporary directory found" as an internal error.

    Returns:
        The directory.

    Raises:
        SetupError: no candidate (``TMPDIR``, ``/tmp``, ``/var/tmp``, ``/usr/tmp``, the current
            directory) can be written; names them and the fix (exit 2).
    """
    import tempfile

    try:
        return tempfile.gettempdir()
    except FileNotFoundError as err:
        tried = (err.strerror or str(err)).partition(" found in ")[2] or "TMPDIR, /tmp, /var/tmp, /usr/tmp"
        raise SetupError(
            f"no usable temporary directory: none of {tried} can take a file (full, read-only, or a file-size "
            "limit: ulimit -f); TensorFlow needs one to start: free space, raise the limit, or set TMPDIR to a "
            "writable directory"
        ) from None


class _ConsoleHandler(logging.Handler):
    """Print TensorFlow log records through a rich console (above a live progress bar)."""

    def __init__(self, console: Any, verbose: bool) -> None:
        super().__init__(level=logging.DEBUG if verbose else logging.INFO)
        self._console = console
        self._verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if self._verbose:
            return True
        if record.funcName in tf_internals.HOOK_LOG_FUNCS:  # LoggingTensorHook's, StepCounterHook's lines
            return True
        if record.levelno >= logging.WARNING and (
            record.module == _HOOKS_MODULE or _is_hookrun_hook(record.pathname)
        ):
            return True  # e.g. NanTensorHook's "Model diverged with loss = NaN." before it stops the run
        # Deprecation notices and TensorFlow's own INFO chatter are noise unless --verbose.
        return record.levelno >= logging.ERROR

    def emit(self, record: logging.LogRecord) -> None:
        """Print the record's message as is, one line (prefixed with its level unless INFO), soft-wrapped.

        A ``rich.text.Text`` is printed, so no markup, highlighting or emoji code (``:name:``) touches the
        message, and rich skips parsing it.
        """
        try:
            prefix = "" if record.levelno == logging.INFO else f"{record.levelname}: "
            self._console.print(Text(prefix + record.getMessage()), soft_wrap=True)
        except Exception:  # pragma: no cover - logging must never break training
            self.handleError(record)


def _is_hookrun_hook(path: str) -> bool:
    """True when ``path`` is a module of ``hookrun.hooks`` (a hook's folder included)."""
    import hookrun.hooks

    root = os.path.dirname(os.path.abspath(hookrun.hooks.__file__))
    return os.path.commonpath([root, os.path.abspath(path)]) == root


@contextlib.contextmanager
def tf_logging_to(console: Any, verbose: bool = False) -> Iterator[None]:
    """Route the ``tensorflow`` logger to ``console`` for the duration of a run.

    Without ``verbose`` only the lines the user's hooks produce
    (``logging_tensor``, ``step_counter``), warnings of TensorFlow's hooks
    (``nan_tensor`` stopping on a NaN loss) and errors get through; with it,
    all of TensorFlow's INFO logs. The logger's previous handlers, level and
    propagation are restored on exit.

    Args:
        console: a ``rich.console.Console``.
        verbose: show every TensorFlow log record from DEBUG up.
    """
    logger = logging.getLogger("tensorflow")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    handler = _ConsoleHandler(console, verbose)
    logger.handlers = [handler]
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.handlers, level, logger.propagate = saved[0], saved[1], saved[2]
        logger.setLevel(level)
