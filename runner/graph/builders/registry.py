"""The builder registry, found from the builders themselves: every built-in builder is one folder of ``builders/``.

A built-in builder ``<name>`` is the package ``hookrun.runner.graph.builders.<name>``:

- ``<name>/builder.py``: the function ``<name>`` (``fn(features, labels, params) -> GraphSpec``, or a model_fn
  ``fn(features, labels, mode, params) -> EstimatorSpec``), imported only when the builder is used;
- its params model in ``config_schemas/builders.py``: a ``BuilderParams`` subclass whose ``builder`` is ``<name>``
  (pydantic, no TensorFlow: ``validate`` checks ``graph.params`` with it; ``config_schemas`` may not import
  ``runner``, so the model cannot live in the folder).

Everything else derives from these two: the names ``graph.builder`` accepts, the classifiers, ``list-hooks``'
builders table. :func:`builtin_names` checks that each folder has its params model and each model its folder.
Packages of ``builders/`` without ``builder.py`` (``canned``) are shared code, not builders.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hookrun.config_schemas.builders import BUILDER_PARAMS
from hookrun.config_schemas.imports import import_object

#: The name of a builder's implementation module inside its folder.
IMPLEMENTATION = "builder"


class RegistryError(RuntimeError):
    """A folder of ``builders/`` is not a well-formed builder (a bug in hookrun, not in a config)."""


@functools.cache
def builtin_names() -> tuple[str, ...]:
    """Every built-in builder: the folders of ``builders/`` with a ``builder.py``, sorted.

    Raises:
        RegistryError: a folder without a params model in ``config_schemas/builders.py``, or a params model
            without a folder.
    """
    import hookrun.runner.graph.builders as package

    names = sorted(
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if info.ispkg and importlib.util.find_spec(f"{package.__name__}.{info.name}.{IMPLEMENTATION}") is not None
    )
    missing = [name for name in names if name not in BUILDER_PARAMS]
    orphans = [name for name in BUILDER_PARAMS if name not in names]
    if missing or orphans:
        raise RegistryError(
            f"builders without a params model in config_schemas/builders.py: {missing}; "
            f"params models without a folder runner/graph/builders/<name>/builder.py: {orphans}"
        )
    return tuple(names)


def get_builder(name: str, base_dir: Path, params: dict[str, Any] | None = None) -> Callable[..., Any]:
    """Return the builder function for ``graph.builder``.

    A built-in's ``builder.py`` may define ``variant(params)``: the function to use instead for these params,
    or None (``dnn_classifier`` with ``feature_columns`` is TF 1.15's canned model_fn, without it the dense
    builder).

    Args:
        name: a built-in name (a folder of ``builders/``), or ``package.module:function``.
        base_dir: the config file's directory (custom modules resolve there first).
        params: ``graph.params`` (placeholders expanded) for a built-in's ``variant``; None: the folder's function.

    Returns:
        A callable ``fn(features, labels, params)`` (or a model_fn).

    Raises:
        SetupError: the module does not import or the name is not callable.
    """
    if name in builtin_names():
        module = importlib.import_module(f"{__package__}.{name}.{IMPLEMENTATION}")
        variant = getattr(module, "variant", None)
        chosen = variant(params) if variant is not None and params is not None else None
        return chosen if chosen is not None else getattr(module, name)
    return import_object(name, base_dir, what="graph.builder")
