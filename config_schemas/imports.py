"""Resolve ``package.module:attr`` import paths named in a config (builders, custom hooks). No TensorFlow."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from hookrun.config_schemas.errors import SetupError


def import_object(path: str, base_dir: Path, what: str, callable_required: bool = True) -> Any:
    """Import ``package.module:attr`` (``attr`` may be dotted), beside the config file first.

    The config's directory is put at the front of ``sys.path`` for the
    import, so a config and its ``my_hooks.py`` can sit side by side; then
    the normal ``sys.path`` applies.

    Args:
        path: ``package.module:attr``.
        base_dir: the config file's directory.
        what: the config key, for messages (e.g. ``hooks[3].class``).
        callable_required: raise unless the object is callable.

    Returns:
        The object.

    Raises:
        SetupError: malformed path, the module fails to import (the reason is
            given), the attribute is missing, or it is not callable.
    """
    module_name, sep, attr_path = path.partition(":")
    if not sep or not module_name or not attr_path:
        raise SetupError(f"{what}: {path!r} is not of the form `package.module:name`")
    base = str(base_dir)
    added = base not in sys.path
    if added:
        sys.path.insert(0, base)
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # the user's module may raise anything at import
        reason = f"{type(err).__name__}: {err}"
        raise SetupError(f"{what}: cannot import module {module_name!r} ({reason})") from err
    finally:
        if added:
            sys.path.remove(base)
    obj: Any = module
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SetupError(f"{what}: module {module_name!r} has no attribute {attr_path!r}") from None
    if callable_required and not callable(obj):
        raise SetupError(f"{what}: {path!r} is a {type(obj).__name__}, not callable")
    return obj
