"""Pydantic models of a hookrun config. Never imports TensorFlow.

The names below are imported on first access (PEP 562), so importing one
submodule (``hookrun.config_schemas.hooks`` for ``hookrun list-hooks``) does
not import and define every other model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookrun.config_schemas.data import DataConfig
    from hookrun.config_schemas.graph import BUILTIN_BUILDERS, GraphConfig, OptimizerConfig
    from hookrun.config_schemas.hooks import HOOK_CONFIG_BY_TYPE, HOOK_CONFIGS, HookConfig
    from hookrun.config_schemas.run_config import RunConfig
    from hookrun.config_schemas.session import SessionConfig

#: Public name -> the submodule that defines it.
_EXPORTS = {
    "BUILTIN_BUILDERS": "graph",
    "HOOK_CONFIGS": "hooks",
    "HOOK_CONFIG_BY_TYPE": "hooks",
    "DataConfig": "data",
    "GraphConfig": "graph",
    "HookConfig": "hooks",
    "OptimizerConfig": "graph",
    "RunConfig": "run_config",
    "SessionConfig": "session",
}

__all__ = [
    "BUILTIN_BUILDERS",
    "HOOK_CONFIGS",
    "HOOK_CONFIG_BY_TYPE",
    "DataConfig",
    "GraphConfig",
    "HookConfig",
    "OptimizerConfig",
    "RunConfig",
    "SessionConfig",
]


def __getattr__(name: str) -> Any:
    """Import an exported name, or a submodule, on first access.

    Raises:
        AttributeError: ``name`` is neither an exported name nor a submodule.
    """
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, the lazily imported ones included."""
    return sorted({*globals(), *__all__})
