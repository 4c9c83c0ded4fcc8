"""The top-level config model: one YAML file, one training run.

The hook list's model is not known here (``config_schemas`` never imports ``hooks``):
:class:`RunConfigBase` holds every other part, and :func:`run_config_model` adds ``hooks:`` for a
given set of hook config models. ``hookrun.hooks.registry`` calls it with the hooks it finds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Annotated, Any, Union

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import MAX_GPU_INDEX
from hookrun.config_schemas.builders import RESERVED_PARAMS, model_fields
from hookrun.config_schemas.cluster import ClusterConfig
from hookrun.config_schemas.data import DataConfig
from hookrun.config_schemas.devices import TOWER_FORM, batch_message, check_towers
from hookrun.config_schemas.graph import GraphConfig
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.session import SessionConfig

DEVICE_PATTERN = re.compile(r"^(cpu|gpu|gpu:\d{1,3}|auto)$")
DEVICE_FORMS = f"cpu, gpu, gpu:N (N = 0 to {MAX_GPU_INDEX}) or auto"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class RunConfigBase(StrictModel):
    """A hookrun config: graph builder, data, device and (added by :func:`run_config_model`) an ordered hook list.

    The hook list is the whole truth: exactly these hooks run, in this order;
    hookrun adds none of its own and switches off the ones
    ``MonitoredTrainingSession`` would add.
    """

    name: str = Field(
        description="Run name (letters, digits, `_`, `.`, `-`); the default run directory is runs/<name>.",
        json_schema_extra={"pattern": NAME_PATTERN.pattern},
    )
    graph: GraphConfig = Field(description="The graph builder, its params and the optimizer.")
    data: DataConfig = Field(description="The CSV input.")
    device: str | list[str] = Field(
        default="cpu",
        description=f"Where the model's ops run: {DEVICE_FORMS}; or towers: {TOWER_FORM} "
        "(one model copy on each, the global data.batch_size split evenly; docs/devices.md).",
        json_schema_extra={"pattern": DEVICE_PATTERN.pattern},
    )
    session: SessionConfig = Field(default_factory=SessionConfig, description="Run directory and session settings.")
    cluster: ClusterConfig | None = Field(
        default=None,
        description="Parameter-server training on TensorFlow's gRPC runtime: task addresses (or TF_CONFIG's) "
        "and settings; `hookrun train --task worker:1` picks this process's task.",
    )
    #: The ``hooks:`` entries; :func:`run_config_model` narrows the item to the union of the hook types.
    hooks: list[HookConfig] = Field(default_factory=list, description="SessionRunHooks, in the order they are called.")

    @model_serializer(mode="wrap")
    def _without_absent_cluster(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave ``cluster`` out of the resolved config when there is none (single-process configs stay as before)."""
        data = handler(self)
        if self.cluster is None and isinstance(data, dict):
            data.pop("cluster", None)
        return data

    @model_validator(mode="after")
    def _reserved_params(self) -> RunConfigBase:
        """``graph.params.label_scale``/``feature_columns`` are the runner's with data files; free with ``input_fn``."""
        if self.data.input_fn is not None:  # params reach the model_fn as written: nothing is added
            return self
        own = model_fields(self.graph.builder)  # a built-in's own `feature_columns` (YAML columns) is not the runner's
        reserved = [key for key in RESERVED_PARAMS[1:] if key in self.graph.params and key not in own]
        if reserved:
            raise ValueError(
                f"graph.params.{reserved[0]}: set by the runner when it calls the builder on data files "
                "(`label_scale`: from data.label_scale; `feature_columns`: with named features); rename this param "
                "(with data.input_fn, params are passed as written)"
            )
        return self

    @field_validator("name")
    @classmethod
    def _name_form(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            fixed = re.sub(r"[^A-Za-z0-9_.-]+", "-", value).strip("-_.")
            hint = f"; e.g. `{fixed}`" if fixed else ""
            raise ValueError(
                f"run name {value!r} may hold only letters, digits, `_`, `.` and `-`, starting with a letter "
                f"or digit (it names the run directory runs/<name>){hint}"
            )
        return value

    @model_validator(mode="after")
    def _towers_fit(self) -> RunConfigBase:
        """With towers (``device:`` a list): the global batch divides by K (each worker's batch on a cluster)."""
        if not isinstance(self.device, list):
            return self
        per_worker = self.cluster is not None or _tf_config_cluster()  # a worker's batch, not the global one
        message = (
            batch_message(self.data.batch_size, len(self.device), per_worker=per_worker)
            if self.data.input_fn is None
            else None
        )
        if message is not None:
            raise ValueError(message)
        return self

    @field_validator("device", mode="before")
    @classmethod
    def _device_kind(cls, value: Any) -> Any:
        """One issue for a ``device`` that is neither a string nor a list of strings (not one per union branch)."""
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return value
        raise ValueError("must be a string, or a list of strings such as [gpu:0, gpu:1]")  # the loader adds (got ...)

    @field_validator("device")
    @classmethod
    def _device_form(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list):
            return check_towers(value)
        if not DEVICE_PATTERN.match(value):
            hint = ""
            normal = value.strip().lower()
            if normal != value and DEVICE_PATTERN.match(normal):
                hint = f"; did you mean `{normal}`?"
            elif re.fullmatch(r"gpu:\d+", normal):
                hint = f"; a GPU index is at most {MAX_GPU_INDEX}"
            elif normal.startswith("gpu"):
                hint = "; a GPU index is a whole number, e.g. `gpu:0`"
            raise ValueError(f"device {value!r} is not one of {DEVICE_FORMS}{hint}")
        return value


def _tf_config_cluster() -> bool:
    """Whether the ``TF_CONFIG`` environment variable names a cluster (a task of it reads each worker's batch).

    A config without ``cluster:`` runs on the cluster ``TF_CONFIG`` names, as ``tf.estimator`` did; an unreadable
    ``TF_CONFIG`` counts as none here (training names its fault).
    """
    text = os.environ.get("TF_CONFIG", "")
    try:
        parsed = json.loads(text) if text.strip() else None
    except ValueError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("cluster"), dict) and bool(parsed["cluster"])


def run_config_model(hook_configs: Sequence[type[HookConfig]]) -> type[RunConfigBase]:
    """The config model for a set of hook types: :class:`RunConfigBase` plus ``hooks:``.

    Args:
        hook_configs: the hook config models (``HookConfig`` subclasses with a ``type`` literal), in
            catalogue order; ``hooks:`` items are a union of them, discriminated on ``type``.

    Returns:
        A model class named ``RunConfig`` whose last field is ``hooks`` (the order ``resolved_yaml``
        writes).

    Raises:
        ValueError: no hook config model is given.
    """
    if not hook_configs:
        raise ValueError("run_config_model needs at least one hook config model")
    union: Any = Union[tuple(hook_configs)]  # noqa: UP007 - a union built from a tuple
    if len(hook_configs) > 1:
        union = Annotated[union, Field(discriminator="type")]
    return create_model(
        "RunConfig",
        __base__=RunConfigBase,
        __module__=__name__,
        __doc__=RunConfigBase.__doc__,
        hooks=(
            list[union],
            Field(default_factory=list, description="SessionRunHooks, in the order they are called."),
        ),
    )
