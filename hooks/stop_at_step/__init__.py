"""Config of the ``stop_at_step`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.bounds import Steps
from hookrun.config_schemas.hook_base import HookConfig


class StopAtStepConfig(HookConfig):
    """Request a stop at a global step; mirrors ``tf.compat.v1.train.StopAtStepHook``."""

    summary: ClassVar[str] = "Stop training at a global step (absolute or relative)."
    mirrors: ClassVar[str] = "tf.compat.v1.train.StopAtStepHook"
    catalogue_rank: ClassVar[int] = 10
    exclusive_pairs: ClassVar[tuple[tuple[str, ...], ...]] = (("num_steps", "last_step"),)

    type: Literal["stop_at_step"] = Field(description="Hook type.")
    num_steps: Steps | None = Field(
        default=None,
        description="Steps to run from the global step read when the first session starts, after the "
        "earlier hooks' `after_create_session` (as TensorFlow's `StopAtStepHook`; a recovered session keeps "
        "the last step, a resumed run counts from its own start) (steps). Exclusive with `last_step`.",
    )
    last_step: Steps | None = Field(
        default=None,
        description="Global step at which to stop (steps). Exclusive with `num_steps`.",
    )

    def ends_at_step(self, initial_step: int) -> int:
        """``last_step``, or ``initial_step + num_steps``."""
        return self.last_step if self.last_step is not None else initial_step + (self.num_steps or 0)
