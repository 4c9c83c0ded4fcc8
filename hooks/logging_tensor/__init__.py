"""Config of the ``logging_tensor`` hook."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from hookrun.config_schemas.bounds import Seconds, Steps
from hookrun.config_schemas.hook_base import HookConfig


class LoggingTensorConfig(HookConfig):
    """Log tensor values; mirrors ``tf.compat.v1.train.LoggingTensorHook``."""

    summary: ClassVar[str] = "Log the values of named tensors every N steps or seconds."
    mirrors: ClassVar[str] = "tf.compat.v1.train.LoggingTensorHook"
    catalogue_rank: ClassVar[int] = 30
    reads_tensors: ClassVar[tuple[str, ...]] = ("tensors",)

    type: Literal["logging_tensor"] = Field(description="Hook type.")
    tensors: list[str] | dict[str, str] = Field(
        default_factory=lambda: ["loss", "global_step"],
        description="Tensor names to log (a list), or a mapping from label to tensor name.",
    )
    every_n_iter: Steps | None = Field(
        default=None,
        description="Log every N local steps (steps). Exclusive with `every_n_secs`; "
        "with neither and `at_end: false` the default is 100.",
    )
    every_n_secs: Seconds | None = Field(
        default=None, description="Log every N seconds (seconds). Exclusive with `every_n_iter`."
    )
    at_end: bool = Field(default=False, description="Log once at the end instead of periodically.")

    @field_validator("tensors")
    @classmethod
    def _non_empty(cls, value: list[str] | dict[str, str]) -> list[str] | dict[str, str]:
        if not value:
            raise ValueError("name at least one tensor")
        return value

    @model_validator(mode="before")
    @classmethod
    def _default_every_n_iter(cls, data: Any) -> Any:
        """Default to ``every_n_iter: 100`` when no trigger is given at all."""
        if isinstance(data, dict) and not any(
            data.get(k) not in (None, False) for k in ("every_n_iter", "every_n_secs", "at_end")
        ):
            return {**data, "every_n_iter": 100}
        return data

    @model_validator(mode="after")
    def _one_trigger(self) -> LoggingTensorConfig:
        """Apply TensorFlow's rule: exactly one of ``every_n_iter``, ``every_n_secs``, ``at_end``."""
        given = [k for k in ("every_n_iter", "every_n_secs") if getattr(self, k) is not None]
        if len(given) == 2:
            raise ValueError("set exactly one of `every_n_iter` or `every_n_secs`, not both")
        if self.at_end and given:
            raise ValueError(f"`at_end: true` logs only at the end; drop `{given[0]}`")
        return self
