"""Config of the ``step_counter`` hook."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from hookrun.config_schemas.bounds import Seconds, Steps
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.run_files import TRAIN_EVENT_DIR


class StepCounterConfig(HookConfig):
    """Measure steps per second; mirrors ``tf.compat.v1.train.StepCounterHook``."""

    summary: ClassVar[str] = "Log and summarise global steps per second (`global_step/sec`)."
    mirrors: ClassVar[str] = "tf.compat.v1.train.StepCounterHook"
    catalogue_rank: ClassVar[int] = 60
    chief_only_default: ClassVar[bool] = True
    exclusive_pairs: ClassVar[tuple[tuple[str, ...], ...]] = (("every_n_steps", "every_n_secs"),)

    type: Literal["step_counter"] = Field(description="Hook type.")
    every_n_steps: Steps | None = Field(
        default=None,
        description="Measure every N global steps (steps). Exclusive with `every_n_secs`; default 100.",
    )
    every_n_secs: Seconds | None = Field(
        default=None, description="Measure every N seconds (seconds). Exclusive with `every_n_steps`."
    )
    output_dir: str | None = Field(
        default=None,
        description="Event file directory, relative to the run directory; default: `train` (TensorBoard shows "
        "the run as `<run>/train`, beside the evaluation's `<run>/eval`).",
    )

    def event_dir(self) -> str:
        """The event files go to ``output_dir`` (default: ``train``, :data:`TRAIN_EVENT_DIR`)."""
        return self.output_dir or TRAIN_EVENT_DIR

    @model_validator(mode="before")
    @classmethod
    def _default_every_n_steps(cls, data: Any) -> Any:
        """Default to ``every_n_steps: 100`` when neither trigger is given, as TensorFlow does."""
        if isinstance(data, dict) and data.get("every_n_steps") is None and data.get("every_n_secs") is None:
            return {**data, "every_n_steps": 100}
        return data
