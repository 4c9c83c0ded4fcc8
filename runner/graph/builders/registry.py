"""Find a graph builder by built-in name or ``module:function`` path."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hookrun.config_schemas.imports import import_object

#: Built-in name -> "module:function" (imported only when used).
BUILTINS: dict[str, str] = {
    "linear_regressor": "hookrun.runner.graph.builders.linear_regressor:linear_regressor",
    "dnn_regressor": "hookrun.runner.graph.builders.dnn_regressor:dnn_regressor",
    "linear_classifier": "hookrun.runner.graph.builders.linear_classifier:linear_classifier",
    "dnn_classifier": "hookrun.runner.graph.builders.dnn_classifier:dnn_classifier",
    "dnn_linear_combined_classifier": (
        "hookrun.runner.graph.builders.dnn_linear_combined_classifier:dnn_linear_combined_classifier"
    ),
    "dnn_linear_combined_regressor": (
        "hookrun.runner.graph.builders.dnn_linear_combined_regressor:dnn_linear_combined_regressor"
    ),
}


def get_builder(name: str, base_dir: Path) -> Callable[..., Any]:
    """Return the builder function for ``graph.builder``.

    Args:
        name: a key of :data:`BUILTINS`, or ``package.module:function``.
        base_dir: the config file's directory (custom modules resolve there first).

    Returns:
        A callable ``fn(features, labels, params)``.

    Raises:
        SetupError: the module does not import or the name is not callable.
    """
    if name in BUILTINS:
        module, _, attr = BUILTINS[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    return import_object(name, base_dir, what="graph.builder")
