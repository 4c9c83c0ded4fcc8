"""Config models of the hooks, one file a hook (mirrors ``hooks/``).

To add a hook type: write its config model here (a ``HookConfig`` subclass
with a ``type`` literal), add it to ``HOOK_CONFIGS`` below, then write the
hook itself in ``hooks/<type>.py`` and register it in ``hooks/registry.py``.
"""

from __future__ import annotations

from typing import Annotated, Union  # noqa: F401 - Union[tuple] builds the hook union

from pydantic import Field

from hookrun.config_schemas.hooks._base import HookConfig
from hookrun.config_schemas.hooks.checkpoint_saver import CheckpointSaverConfig
from hookrun.config_schemas.hooks.custom import CustomHookConfig
from hookrun.config_schemas.hooks.early_stopping import EarlyStoppingConfig
from hookrun.config_schemas.hooks.evaluation import EvaluationConfig
from hookrun.config_schemas.hooks.global_step_waiter import GlobalStepWaiterConfig
from hookrun.config_schemas.hooks.history_saver import HistorySaverConfig
from hookrun.config_schemas.hooks.logging_tensor import LoggingTensorConfig
from hookrun.config_schemas.hooks.nan_tensor import NanTensorConfig
from hookrun.config_schemas.hooks.progress_bar import ProgressBarConfig
from hookrun.config_schemas.hooks.step_counter import StepCounterConfig
from hookrun.config_schemas.hooks.stop_at_step import StopAtStepConfig
from hookrun.config_schemas.hooks.summary_saver import SummarySaverConfig

#: Every hook config model, in catalogue order (TensorFlow's, then tfestimators', then the estimator
#: evaluation hooks, then custom).
HOOK_CONFIGS: tuple[type[HookConfig], ...] = (
    StopAtStepConfig,
    CheckpointSaverConfig,
    LoggingTensorConfig,
    NanTensorConfig,
    SummarySaverConfig,
    StepCounterConfig,
    GlobalStepWaiterConfig,
    ProgressBarConfig,
    HistorySaverConfig,
    EvaluationConfig,
    EarlyStoppingConfig,
    CustomHookConfig,
)

#: Hook type name -> config model.
HOOK_CONFIG_BY_TYPE: dict[str, type[HookConfig]] = {
    cls.model_fields["type"].annotation.__args__[0]: cls for cls in HOOK_CONFIGS  # type: ignore[union-attr]
}

#: The ``hooks:`` list item: a union discriminated on ``type``.
AnyHookConfig = Annotated[Union[HOOK_CONFIGS], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007

__all__ = [
    "HOOK_CONFIGS",
    "HOOK_CONFIG_BY_TYPE",
    "AnyHookConfig",
    "HookConfig",
    "CheckpointSaverConfig",
    "CustomHookConfig",
    "EarlyStoppingConfig",
    "EvaluationConfig",
    "GlobalStepWaiterConfig",
    "HistorySaverConfig",
    "LoggingTensorConfig",
    "NanTensorConfig",
    "ProgressBarConfig",
    "StepCounterConfig",
    "StopAtStepConfig",
    "SummarySaverConfig",
]
