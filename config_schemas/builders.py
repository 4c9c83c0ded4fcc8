"""Parameter models of the built-in graph builders (``graph.params``).

One model per builder folder ``runner/graph/builders/<name>/``: a :class:`BuilderParams` subclass whose
``builder`` class variable is ``<name>`` (and ``classifier`` True when its label is a class id). The names
``graph.builder`` accepts, the classifiers and ``list-hooks``' table all derive from these classes
(:data:`BUILDER_PARAMS`); ``runner/graph/builders/registry.py`` checks every folder has one and every one a
folder. Checked at validation time, without TensorFlow. Custom builders' params are passed through as given.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, PositiveFloat, field_validator, model_validator

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import Count
from hookrun.config_schemas.feature_columns import dense_only, parse_columns

Activation = Literal["relu", "tanh", "sigmoid", "elu", "selu", "softplus"]

#: Keys the runner adds to ``params`` when it calls a builder; a config may not set them.
RESERVED_PARAMS = ("mode", "label_scale", "feature_columns")


class BuilderParams(StrictModel):
    """Base of a built-in builder's params model.

    Class variables (not config keys):
        builder: the builder's name: its folder ``runner/graph/builders/<builder>/``.
        classifier: its label is a class id (the data's text label becomes ids; ``n_classes`` checked).
        canned: a TF 1.15 canned model (its evaluation reports TF's ``MetricKeys``).
    """

    builder: ClassVar[str] = ""
    classifier: ClassVar[bool] = False
    canned: ClassVar[bool] = False
    #: Every subclass naming a ``builder``, in the order they are defined (the order of ``list-hooks``' table).
    registered: ClassVar[dict[str, type[BuilderParams]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("builder"):
            if cls.builder in BuilderParams.registered:
                raise TypeError(f"{cls.__qualname__}: builder {cls.builder!r} already has a params model")
            BuilderParams.registered[cls.builder] = cls


CannedOptimizerName = Literal["Adagrad", "Adam", "Ftrl", "RMSProp", "SGD"]
LossReduction = Literal["sum", "mean", "sum_over_batch_size", "sum_by_nonzero_weights"]


class CannedOptimizer(StrictModel):
    """An optimizer of a canned model with its learning rate (a name alone gets TF 1.15's default rate)."""

    name: CannedOptimizerName = Field(description="The tf.compat.v1.train optimizer, by TF 1.15's canned name.")
    learning_rate: PositiveFloat = Field(description="Learning rate (per step).")


class _SingleListParams(BuilderParams):
    """The dense builders' optional ``feature_columns``: with it, TF 1.15's canned model over YAML columns.

    Without ``feature_columns`` the builder takes the dense matrix (numeric columns z-scored, text one-hot) and
    ``graph.optimizer`` trains it. With it, the builder is ``tf.compat.v1.estimator.<Model>``'s model_fn over the
    columns (docs/config.md, "Feature columns"): named raw features, TF 1.15's head, its own ``optimizer``. The
    keys below marked "with feature_columns" are TF 1.15's constructor arguments and need it; ``l2`` is not one.
    """

    #: Keys that only the canned model (``feature_columns`` given) takes.
    canned_only: ClassVar[tuple[str, ...]] = ("optimizer", "weight_column", "loss_reduction")

    feature_columns: list[dict[str, Any]] | None = Field(
        default=None,
        description="YAML feature columns: build TF 1.15's canned model over them (without: the dense matrix).",
    )
    optimizer: CannedOptimizerName | CannedOptimizer | None = Field(
        default=None,
        description="Its optimizer (with feature_columns only; default TF 1.15's: Adagrad for DNN, Ftrl for "
        "linear); without feature_columns, graph.optimizer trains the model.",
    )
    weight_column: str | None = Field(
        default=None, description="Loss weight feature (with feature_columns): a numeric feature weighting each row."
    )
    loss_reduction: LossReduction = Field(
        default="sum", description="Loss reduction (with feature_columns): the batch's losses; TF 1.15: sum."
    )

    @field_validator("feature_columns", mode="after")
    @classmethod
    def _single_list(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if value is not None:
            parsed = parse_columns(value, "feature_columns")
            if cls.builder.startswith("dnn"):
                dense_only(parsed, "feature_columns")
        return value

    @model_validator(mode="after")
    def _canned_keys(self) -> _SingleListParams:
        if self.feature_columns is None:
            fields = type(self).model_fields
            given = [key for key in self.canned_only if getattr(self, key) != fields[key].default]
            if given:
                raise ValueError(
                    f"{given[0]}: an argument of TF 1.15's canned model, taken with feature_columns only; add "
                    "`feature_columns:` or remove it"
                )
        elif getattr(self, "l2", 0.0):
            raise ValueError(
                "l2: not an argument of TF 1.15's canned models (taken without feature_columns only); remove it"
            )
        return self


class LinearRegressorParams(_SingleListParams):
    """Params of ``linear_regressor``: ``y = x W + b``, mean squared error.

    With ``feature_columns``: ``tf.compat.v1.estimator.LinearRegressor`` (TF 1.15) over them.
    """

    builder: ClassVar[str] = "linear_regressor"
    canned_only: ClassVar[tuple[str, ...]] = (*_SingleListParams.canned_only, "sparse_combiner", "label_dimension")

    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")
    sparse_combiner: Literal["sum", "mean", "sqrtn"] | None = Field(
        default=None, description="How a multivalent categorical column combines (with feature_columns)."
    )
    label_dimension: Count | None = Field(default=None, description="The label's width (with feature_columns).")


class _DnnParams(_SingleListParams):
    """The DNN builders' params.

    With ``feature_columns``, ``activation`` and ``dropout`` are TF 1.15's ``activation_fn`` and ``dropout`` (0: none).
    """

    hidden_units: list[Count] = Field(
        default_factory=lambda: [64, 32], min_length=1, description="Units per hidden layer, input to output."
    )
    activation: Activation = Field(default="relu", description="Activation of hidden layers.")
    dropout: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Fraction of each hidden layer's outputs dropped while training (not in evaluation).",
    )
    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")
    batch_norm: bool | None = Field(
        default=None, description="Batch norm after each hidden layer (with feature_columns; default false)."
    )


class DnnRegressorParams(_DnnParams):
    """Params of ``dnn_regressor``: fully connected hidden layers, linear output, mean squared error.

    With ``feature_columns``: ``tf.compat.v1.estimator.DNNRegressor`` (TF 1.15) over them.
    """

    builder: ClassVar[str] = "dnn_regressor"
    canned_only: ClassVar[tuple[str, ...]] = (*_SingleListParams.canned_only, "batch_norm", "label_dimension")

    label_dimension: Count | None = Field(default=None, description="The label's width (with feature_columns).")


class LinearClassifierParams(_SingleListParams):
    """Params of ``linear_classifier``: ``logits = x W + b``, softmax cross-entropy.

    Labels are class ids ``0 .. n_classes-1``, or text mapped to ids by the training split's vocabulary.
    With ``feature_columns``: ``tf.compat.v1.estimator.LinearClassifier`` (TF 1.15) over them.
    """

    builder: ClassVar[str] = "linear_classifier"
    classifier: ClassVar[bool] = True
    canned_only: ClassVar[tuple[str, ...]] = (*_SingleListParams.canned_only, "sparse_combiner", "label_vocabulary")

    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")
    n_classes: Count = Field(default=2, ge=2, description="Number of classes (count, >= 2).")
    sparse_combiner: Literal["sum", "mean", "sqrtn"] | None = Field(
        default=None, description="How a multivalent categorical column combines (with feature_columns)."
    )
    label_vocabulary: list[str] | None = Field(
        default=None,
        description="The label's strings in class-id order (with feature_columns; input_fn labels are text).",
    )


class DnnClassifierParams(_DnnParams):
    """Params of ``dnn_classifier``: hidden layers, softmax output, cross-entropy.

    Labels are class ids ``0 .. n_classes-1``, or text mapped to ids by the training split's vocabulary.
    With ``feature_columns``: ``tf.compat.v1.estimator.DNNClassifier`` (TF 1.15) over them.
    """

    builder: ClassVar[str] = "dnn_classifier"
    classifier: ClassVar[bool] = True
    canned_only: ClassVar[tuple[str, ...]] = (*_SingleListParams.canned_only, "batch_norm", "label_vocabulary")

    n_classes: Count = Field(default=2, ge=2, description="Number of classes (count, >= 2).")
    label_vocabulary: list[str] | None = Field(
        default=None,
        description="The label's strings in class-id order (with feature_columns; input_fn labels are text).",
    )


class _DnnLinearCombinedParams(BuilderParams):
    """TF 1.15's ``DNNLinearCombined*`` arguments shared by the classifier and the regressor.

    The columns are YAML ``feature_columns`` entries (docs/config.md, "Feature columns"); either list may be
    left out (not both). The model trains its own optimizers: ``graph.optimizer`` is not used.
    """

    linear_feature_columns: list[dict[str, Any]] = Field(
        default_factory=list, description="Columns of the linear (wide) part: any kind."
    )
    linear_optimizer: CannedOptimizerName | CannedOptimizer = Field(
        default="Ftrl", description="The linear part's optimizer (by name: rate min(0.005, 1/sqrt(columns)))."
    )
    dnn_feature_columns: list[dict[str, Any]] = Field(
        default_factory=list, description="Columns of the DNN (deep) part: numeric, bucketized, embedding, indicator."
    )
    dnn_optimizer: CannedOptimizerName | CannedOptimizer = Field(
        default="Adagrad", description="The DNN part's optimizer (by name: rate 0.001)."
    )
    dnn_hidden_units: list[Count] | None = Field(
        default=None, description="Units per hidden layer (required with dnn_feature_columns)."
    )
    dnn_activation_fn: Literal["relu", "relu6", "tanh", "sigmoid", "elu", "selu", "softplus"] | None = Field(
        default="relu", description="Hidden-layer activation (tf.nn.<name>; null: linear)."
    )
    dnn_dropout: float | None = Field(default=None, ge=0.0, lt=1.0, description="Drop probability while training.")
    weight_column: str | None = Field(default=None, description="A numeric feature weighting each example's loss.")
    loss_reduction: LossReduction = Field(
        default="sum", description="How the batch's losses are reduced (TF 1.15's v1 default: sum)."
    )
    batch_norm: bool = Field(default=False, description="Batch normalization after each hidden layer.")
    linear_sparse_combiner: Literal["sum", "mean", "sqrtn"] = Field(
        default="sum", description="How the linear part combines a multivalent categorical column."
    )
    @field_validator("linear_feature_columns", "dnn_feature_columns", mode="after")
    @classmethod
    def _columns(cls, value: list[dict[str, Any]], info: Any) -> list[dict[str, Any]]:
        if value:
            parsed = parse_columns(value, info.field_name, refs=False)
            if info.field_name == "dnn_feature_columns":
                dense_only(parsed, info.field_name)
        return value

    @model_validator(mode="after")
    def _parts(self) -> _DnnLinearCombinedParams:
        if not self.linear_feature_columns and not self.dnn_feature_columns:
            raise ValueError("give linear_feature_columns or dnn_feature_columns (or both)")
        if self.dnn_feature_columns and not self.dnn_hidden_units:
            raise ValueError("dnn_hidden_units: required with dnn_feature_columns, e.g. [64, 32]")
        names: dict[str, Any] = {}
        fields = [field for field in ("linear_feature_columns", "dnn_feature_columns") if getattr(self, field)]
        for field in fields:  # names are shared between the two lists: every name first, then the references
            parse_columns(getattr(self, field), field, names, refs=False)
        for field in fields:
            parse_columns(getattr(self, field), field, dict(names), refs=True)
        return self


class DnnLinearCombinedRegressorParams(_DnnLinearCombinedParams):
    """Params of ``dnn_linear_combined_regressor``: TF 1.15's ``DNNLinearCombinedRegressor`` arguments."""

    builder: ClassVar[str] = "dnn_linear_combined_regressor"
    canned: ClassVar[bool] = True

    label_dimension: Count = Field(default=1, description="The label's width.")


class DnnLinearCombinedClassifierParams(_DnnLinearCombinedParams):
    """Params of ``dnn_linear_combined_classifier``: TF 1.15's ``DNNLinearCombinedClassifier`` arguments."""

    builder: ClassVar[str] = "dnn_linear_combined_classifier"
    classifier: ClassVar[bool] = True
    canned: ClassVar[bool] = True

    n_classes: Count = Field(default=2, ge=2, description="Number of classes (2: sigmoid head; more: softmax).")
    label_vocabulary: list[str] | None = Field(
        default=None, description="The label's strings in class-id order (labels from an input_fn are then text)."
    )


#: Built-in builder name -> its params model (every ``BuilderParams`` subclass naming a ``builder``).
BUILDER_PARAMS: dict[str, type[BuilderParams]] = dict(BuilderParams.registered)

#: Built-in builders whose label is a class id (the others regress a number).
CLASSIFIERS = frozenset(name for name, cls in BUILDER_PARAMS.items() if cls.classifier)

#: Built-in builders that are TF 1.15's canned models (heads' metric names).
CANNED = frozenset(name for name, cls in BUILDER_PARAMS.items() if cls.canned)


def is_canned(builder: str, params: dict[str, Any] | Any) -> bool:
    """Whether the built-in ``builder`` with these ``graph.params`` is TF 1.15's canned model.

    True for ``dnn_linear_combined_*``, and for the four dense builders given ``feature_columns``.
    """
    given = params.get("feature_columns") is not None if isinstance(params, dict) else False
    return builder in CANNED or (builder in BUILDER_PARAMS and given and "feature_columns" in model_fields(builder))


def model_fields(builder: str) -> dict[str, Any]:
    """The params model's fields of a built-in ``builder`` (empty for a custom one)."""
    model = BUILDER_PARAMS.get(builder)
    return dict(model.model_fields) if model is not None else {}


def builtin_eval_metrics(builder: str, params: dict[str, object]) -> list[str] | None:
    """The metric names a built-in builder's evaluation reports (``val_<name>`` besides ``val_loss``).

    Args:
        builder: ``graph.builder``.
        params: the checked ``graph.params`` (defaults filled in).

    Returns:
        ``["rmse", "mae"]`` for a regressor, ``["accuracy"]`` for a classifier (``["accuracy", "auc"]`` when
        ``n_classes`` is 2); TF 1.15's ``MetricKeys`` for a canned model (a dense builder given
        ``feature_columns`` is one); None for a custom builder (known only once its graph is built).
    """
    if builder not in BUILDER_PARAMS:
        return None
    if is_canned(builder, params):  # TF 1.15's heads' MetricKeys
        if builder not in CLASSIFIERS:
            return ["average_loss", "label/mean", "prediction/mean"]
        if params.get("n_classes") != 2:
            return ["accuracy", "average_loss"]
        return ["accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "average_loss", "label/mean",
                "precision", "prediction/mean", "recall"]
    if builder in CLASSIFIERS:
        return ["accuracy", "auc"] if params.get("n_classes") == 2 else ["accuracy"]
    return ["rmse", "mae"]
