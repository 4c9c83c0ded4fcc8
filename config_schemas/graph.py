"""Config of the graph: builder, its params, and the optimizer."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, PositiveFloat, ValidationError, field_validator, model_serializer, model_validator

from hookrun.common.suggest import did_you_mean
from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import Steps
from hookrun.config_schemas.builders import BUILDER_PARAMS, RESERVED_PARAMS
from hookrun.config_schemas.imports import IMPORT_PATH, check_import_path
from hookrun.config_schemas.interpolation import placeholder_problems

#: Built-in graph builders (the folders ``runner/graph/builders/<name>/``).
BUILTIN_BUILDERS = tuple(BUILDER_PARAMS)

#: Optimizers, by hookrun name -> ``tf.compat.v1.train`` class.
OPTIMIZERS = {
    "sgd": "GradientDescentOptimizer",
    "momentum": "MomentumOptimizer",
    "adam": "AdamOptimizer",
    "adagrad": "AdagradOptimizer",
    "rmsprop": "RMSPropOptimizer",
}

_BUILTIN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


class DecayConfig(StrictModel):
    """Exponential learning-rate decay; mirrors ``tf.compat.v1.train.exponential_decay`` on ``global_step``.

    The rate at global step ``s`` is ``learning_rate * decay_rate ** (s / decay_steps)`` (the exponent
    rounded down with ``staircase``).
    """

    decay_steps: Steps = Field(description="Global steps over which the rate is multiplied by `decay_rate`.")
    decay_rate: float = Field(gt=0.0, le=1.0, description="Factor per `decay_steps` (unitless, 0 < r <= 1).")
    staircase: bool = Field(default=False, description="Decay in whole steps of `decay_steps` instead of smoothly.")


class OptimizerConfig(StrictModel):
    """The optimizer that turns the spec's ``loss`` into a ``train_op``.

    Mirrors the ``tf.compat.v1.train`` optimizers; ``minimize`` increments
    ``global_step`` once per step.
    """

    name: Literal["sgd", "momentum", "adam", "adagrad", "rmsprop"] = Field(
        default="adam", description="Optimizer: sgd, momentum, adam, adagrad or rmsprop (tf.compat.v1.train)."
    )
    learning_rate: PositiveFloat = Field(default=0.001, description="Learning rate (per step).")
    momentum: float = Field(
        default=0.9, ge=0.0, lt=1.0, description="Momentum, for `momentum` and `rmsprop` (unitless)."
    )
    decay: DecayConfig | None = Field(
        default=None,
        description="Exponential learning-rate decay on global_step (tf.compat.v1.train.exponential_decay); "
        "default: a constant rate.",
    )

    @model_serializer(mode="wrap")
    def _without_unused_momentum(self, handler: Any) -> dict[str, Any]:
        """The fields, without the default ``momentum`` under an optimizer that has none.

        As ``validate --print`` and ``config.yaml`` show it. A value set on purpose stays, so the dump loads
        back to an equal config.
        """
        data = handler(self)
        default = type(self).model_fields["momentum"].default
        if self.name not in MOMENTUM_OPTIMIZERS and isinstance(data, dict) and data.get("momentum") == default:
            data.pop("momentum")
        return data


#: The optimizers that take ``graph.optimizer.momentum``.
MOMENTUM_OPTIMIZERS = ("momentum", "rmsprop")


class WarmStartConfig(StrictModel):
    """Start a new run from another run's weights; mirrors ``tf.estimator.WarmStartSettings``.

    The variables are initialised from the checkpoint (``tf.compat.v1.train.init_from_checkpoint``)
    instead of their initializers, only when the run directory has no checkpoint of its own: a
    resumed run restores its own. Only trainable variables are warm-started: ``global_step`` and
    the optimizer's slots start afresh, so the new run starts at global step 0.
    """

    from_: str = Field(
        alias="from",
        min_length=1,
        description="A run directory (its latest checkpoint), a directory of checkpoints, or a checkpoint prefix "
        "(`runs/x/model.ckpt-100`); relative to the config file.",
    )
    vars: str = Field(
        default=".*",
        min_length=1,
        description="Regular expression over the new graph's trainable variable names, matched from the start "
        "of the name (as WarmStartSettings' `vars_to_warm_start`); default: every trainable variable.",
    )
    rename: dict[str, str] = Field(
        default_factory=dict,
        description="New variable name -> its name in the checkpoint, for variables renamed since "
        "(WarmStartSettings' `var_name_to_prev_var_name`).",
    )

    @field_validator("vars")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(
                f"{value!r} is not a regular expression ({err}); write one such as `dnn/.*` or `.*`"
            ) from None
        return value


class GraphConfig(StrictModel):
    """Which graph to build and how to train it."""

    builder: str = Field(
        description="A built-in builder (" + ", ".join(BUILTIN_BUILDERS) + ") or `package.module:function`."
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword parameters passed to the builder as `params`. In strings, `${config_dir}` (the config "
        "file's directory), `${run_dir}` (the run directory) and `${steps_per_run}` are replaced when the graph is "
        "built, as in a custom hook's args; `$$` writes one `$`.",
    )
    style: Literal["auto", "builder", "model_fn"] = Field(
        default="auto",
        description="How the builder is called: `builder` as fn(features, labels, params) with params['mode']; "
        "`model_fn` as Estimator's fn(features, labels, mode, params) returning an EstimatorSpec; `auto`: "
        "model_fn when the function has a parameter named `mode`.",
    )
    features: Literal["dense", "named"] | None = Field(
        default=None,
        description="The form of `features` the builder gets: `dense`, one float32 [batch, n] matrix (numeric "
        "columns z-scored, categorical one-hot), or `named`, a dict column -> tensor (categorical columns as int64 "
        "ids for an embedding, `num_buckets` in params['feature_columns']; labels in their own dtype). Default: the "
        "builder's `hookrun_features` attribute, else `named` for a model_fn and `dense` for a plain builder.",
    )
    serving_input_fn: str | None = Field(
        default=None,
        description="For `hookrun export`: an Estimator `serving_input_receiver_fn` as `package.module:function`, "
        "called with no arguments; it returns a ServingInputReceiver or TensorServingInputReceiver "
        "(hookrun.runner.trained.serving), whose features reach the model_fn untouched in infer mode. See "
        "docs/trained-model.md.",
    )
    optimizer: OptimizerConfig = Field(
        default_factory=OptimizerConfig,
        description="Optimizer used when the builder returns no `train_op`.",
    )
    warm_start: WarmStartConfig | None = Field(
        default=None,
        description="Initialise the trainable variables from another run's checkpoint "
        "(tf.estimator.WarmStartSettings); applies only when the run directory has no checkpoint of its own.",
    )

    @field_validator("params")
    @classmethod
    def _known_placeholders(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Refuse an unknown ``${...}`` or a ``${`` without ``}`` in params now, before TensorFlow loads."""
        problems = placeholder_problems(value)
        if problems:
            where, message = problems[0]
            raise ValueError(f"params.{'.'.join(str(part) for part in where)}: {message}")
        return value

    @field_validator("serving_input_fn")
    @classmethod
    def _serving_input_fn_path(cls, value: str | None) -> str | None:
        return check_import_path(value)

    @model_serializer(mode="wrap")
    def _without_unset_serving_input_fn(self, handler: Any) -> dict[str, Any]:
        """The fields, without ``serving_input_fn: null``: a config.yaml written before it stays equal on resume."""
        data = handler(self)
        if isinstance(data, dict) and data.get("serving_input_fn", "") is None:
            data.pop("serving_input_fn")
        return data

    @field_validator("builder")
    @classmethod
    def _known_builder(cls, value: str) -> str:
        if ":" in value:
            if not IMPORT_PATH.match(value):
                raise ValueError(f"{value!r} is not an import path of the form `package.module:function`")
            return value
        if value not in BUILTIN_BUILDERS:
            hint = did_you_mean(value, BUILTIN_BUILDERS)
            raise ValueError(
                f"unknown builder {value!r}; use one of {', '.join(BUILTIN_BUILDERS)} or `package.module:function`"
                + hint
            )
        return value

    @model_validator(mode="after")
    def _builtin_params(self) -> GraphConfig:
        """Check ``params`` against the built-in builder's params model and fill its defaults."""
        # (`label_scale` and `feature_columns` are refused by RunConfig: free with data.input_fn, which gets none)
        reserved = [key for key in RESERVED_PARAMS[:1] if key in self.params]
        if reserved:
            raise ValueError(
                f"params.{reserved[0]}: set by the runner when it calls the builder (`mode`: train or eval; "
                "`label_scale`: from data.label_scale; `feature_columns`: with named features); rename this param"
            )
        model = BUILDER_PARAMS.get(self.builder)
        if model is None:
            return self
        if self.features == "named":
            raise ValueError(
                f"features: the built-in builder {self.builder} takes the dense matrix; remove `features: named`"
            )
        if self.style == "model_fn":
            raise ValueError(
                f"style: the built-in builder {self.builder} is not a model_fn; remove `style` or name your own "
                "`package.module:model_fn`"
            )
        try:
            checked = model.model_validate(self.params)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            if first["type"] == "extra_forbidden":
                allowed = ", ".join(model.model_fields)
                raise ValueError(f"params.{where}: unknown param of {self.builder}; allowed: {allowed}") from None
            message = str(first["msg"]).replace("Input should be", "must be", 1).removeprefix("Value error, ")
            raise ValueError(f"params.{where}: {message}" if where else f"params: {message}") from None
        object.__setattr__(self, "params", checked.model_dump())
        return self
