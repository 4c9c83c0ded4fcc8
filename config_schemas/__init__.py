"""Pydantic models of a hookrun config. Never imports TensorFlow."""

from hookrun.config_schemas.data import DataConfig
from hookrun.config_schemas.graph import BUILTIN_BUILDERS, GraphConfig, OptimizerConfig
from hookrun.config_schemas.hooks import HOOK_CONFIG_BY_TYPE, HOOK_CONFIGS, HookConfig
from hookrun.config_schemas.run_config import RunConfig
from hookrun.config_schemas.session import SessionConfig

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
