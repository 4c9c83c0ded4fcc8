"""The top-level config model: one YAML file, one training run."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.data import DataConfig
from hookrun.config_schemas.graph import GraphConfig
from hookrun.config_schemas.hooks import AnyHookConfig
from hookrun.config_schemas.session import SessionConfig

DEVICE_PATTERN = re.compile(r"^(cpu|gpu|gpu:\d+|auto)$")
DEVICE_FORMS = "cpu, gpu, gpu:N (N = 0, 1, ...) or auto"


class RunConfig(StrictModel):
    """A hookrun config: graph builder, data, device and an ordered hook list.

    The hook list is the whole truth: exactly these hooks run, in this order;
    hookrun adds none of its own and switches off the ones
    ``MonitoredTrainingSession`` would add.
    """

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="Run name (letters, digits, `_`, `.`, `-`); the default run directory is runs/<name>.",
    )
    graph: GraphConfig = Field(description="The graph builder, its params and the optimizer.")
    data: DataConfig = Field(description="The CSV input.")
    device: str = Field(default="cpu", description=f"Where the model's ops run: {DEVICE_FORMS}.")
    session: SessionConfig = Field(default_factory=SessionConfig, description="Run directory and session settings.")
    hooks: list[AnyHookConfig] = Field(  # type: ignore[valid-type]
        default_factory=list, description="SessionRunHooks, in the order they are called."
    )

    @field_validator("device")
    @classmethod
    def _device_form(cls, value: str) -> str:
        if not DEVICE_PATTERN.match(value):
            raise ValueError(f"device {value!r} is not one of {DEVICE_FORMS}")
        return value
