"""In-memory Python objects for a config: a model_fn, an input_fn or a hook factory that YAML cannot name.

``hookrun.estimator`` (the tf.estimator face of the runner) trains from objects a program holds (a
``model_fn`` defined in ``__main__``, a lambda ``input_fn``, hook instances). The runner takes import
paths (``graph.builder``, ``data.input_fn``, a ``custom`` hook's ``class``); :func:`register` gives an object
one, ``hookrun.runner.live:<name>``, which :func:`hookrun.config_schemas.imports.import_object` resolves
through this module's ``__getattr__`` (PEP 562) like any other path: nothing else in the runner changes.
Such a path lives only as long as the process; a run directory whose ``config.yaml`` names one cannot be
re-trained or evaluated from the command line (``hookrun.estimator`` notes it in ``summary.json``).

:func:`saving_listeners` hands ``CheckpointSaverListener`` objects to the run's checkpoint savers (as
``Estimator.train(saving_listeners=...)`` did), for the duration of a ``with`` block.

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any

#: The module part of every path :func:`register` makes.
MODULE = "hookrun.runner.live"

_objects: dict[str, Any] = {}
_counter = itertools.count(1)
_listeners: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("saving_listeners", default=())


def register(obj: Any, kind: str = "object", key: str | None = None) -> str:
    """Give ``obj`` an import path for a config, valid for the life of this process.

    Args:
        obj: any object (a function, a hook factory).
        kind: a word for the name (``model_fn``, ``input_fn``, ``hook``): ``[a-z_]+``.
        key: a stable name for the object (``__main__.model_fn``): the same key gives the same path, so
            a run's ``config.yaml`` does not change between two calls with the same functions; the latest
            object registered under it is the one imported. None: a new number.

    Returns:
        ``hookrun.runner.live:<kind>_<key or n>`` (the key's characters other than letters, digits and
        ``_`` become ``_``).

    Raises:
        ValueError: ``kind`` is not a lowercase identifier.
    """
    if not re.fullmatch(r"[a-z_]+", kind):
        raise ValueError(f"kind {kind!r} must be lowercase letters and underscores")
    suffix = re.sub(r"[\W_]+", "_", key).strip("_") if key is not None else ""
    name = f"{kind}_{suffix or next(_counter)}"
    _objects[name] = obj
    return f"{MODULE}:{name}"


def release(path: str) -> None:
    """Forget the object :func:`register` named ``path`` (nothing happens for an unknown path)."""
    _objects.pop(path.partition(":")[2], None)


def is_live(path: str | None) -> bool:
    """``path`` was made by :func:`register` (it names an in-memory object, not an importable one)."""
    return path is not None and path.partition(":")[0] == MODULE


def __getattr__(name: str) -> Any:
    """The registered object ``name`` (PEP 562), for ``import_object``.

    Raises:
        AttributeError: no object of that name is registered in this process (a path from another run).
    """
    try:
        return _objects[name]
    except KeyError:
        raise AttributeError(
            f"{name!r} was an in-memory Python object of another process (hookrun.estimator); it cannot be "
            "imported: give the function an importable name (module:function)"
        ) from None


@contextlib.contextmanager
def saving_listeners(listeners: Sequence[Any]) -> Iterator[None]:
    """Within the block, every checkpoint saver the runner builds also calls ``listeners`` (``HookContext``).

    Mirrors ``tf.estimator.Estimator.train(saving_listeners=...)``: the listeners' ``begin``,
    ``before_save``, ``after_save`` and ``end`` run with the ``CheckpointSaverHook``'s, after hookrun's own
    finite-weights guard.
    """
    token = _listeners.set(tuple(listeners))
    try:
        yield
    finally:
        _listeners.reset(token)


def current_saving_listeners() -> tuple[Any, ...]:
    """The listeners of the enclosing :func:`saving_listeners` block (none outside one)."""
    return _listeners.get()
