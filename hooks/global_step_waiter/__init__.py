"""Config of the ``global_step_waiter`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.bounds import NonNegativeSteps
from hookrun.config_schemas.hook_base import HookConfig


class GlobalStepWaiterConfig(HookConfig):
    """Delay the loop until a global step; mirrors ``tf.compat.v1.train.GlobalStepWaiterHook``."""

    summary: ClassVar[str] = "Wait until the global step reaches a value before this task steps."
    mirrors: ClassVar[str] = "tf.compat.v1.train.GlobalStepWaiterHook"
    catalogue_rank: ClassVar[int] = 70

    type: Literal["global_step_waiter"] = Field(description="Hook type.")
    wait_until_step: NonNegativeSteps = Field(
        description="Global step to wait for before the first step (steps); 0 waits for nothing."
    )
