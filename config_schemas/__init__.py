"""Pydantic models of a hookrun config. Never imports TensorFlow.

The names below are imported on first access (PEP 562), so importing one
submodule (``hookrun.config_schemas.hook_base`` for ``hookrun list-hooks``) does
not import and define every other model. The hook models are not here: each
hook's lives in its folder of ``hooks/``, and ``hookrun.hooks.registry`` builds
the full ``RunConfig`` model from them with :func:`run_config.run_config_model`.
"""

from __future__ import annotations

# One import name per module: `import config_schemas` from the repository root would load a second copy.
if __name__ != "hookrun.config_schemas":
    raise ImportError(
        f"import hookrun.config_schemas, not {__name__}: the folder config_schemas/ installs as hookrun.config_schemas"
    )

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookrun.config_schemas.data import DataConfig
    from hookrun.config_schemas.graph import BUILTIN_BUILDERS, GraphConfig, OptimizerConfig
    from hookrun.config_schemas.hook_base import HookConfig
    from hookrun.config_schemas.run_config import RunConfigBase, run_config_model
    from hookrun.config_schemas.session import SessionConfig

#: Public name -> the submodule that defines it.
_EXPORTS = {
    "BUILTIN_BUILDERS": "graph",
    "DataConfig": "data",
    "GraphConfig": "graph",
    "HookConfig": "hook_base",
    "OptimizerConfig": "graph",
    "RunConfigBase": "run_config",
    "run_config_model": "run_config",
    "SessionConfig": "session",
}

__all__ = [
    "BUILTIN_BUILDERS",
    "DataConfig",
    "GraphConfig",
    "HookConfig",
    "OptimizerConfig",
    "RunConfigBase",
    "SessionConfig",
    "run_config_model",
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
