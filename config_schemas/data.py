"""Config of the input data: CSV or TFRecord files streamed through ``tf.data``, and how they are preprocessed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import MAX_LABEL_SCALE, MIN_LABEL_SCALE, MIN_SPLIT, Count, Seed, Steps
from hookrun.config_schemas.imports import check_import_path

#: The missing-value policies given by name.
MISSING_NAMES = ("error", "drop", "mean", "median")


class ConstantFill(StrictModel):
    """Fill an empty cell with a fixed value: ``{constant: V}``."""

    constant: float | str = Field(
        description="The value put in an empty cell: a number for a numeric column, any text for a categorical one."
    )


class TensorFeature(StrictModel):
    """A TFRecord feature read as a tensor, not as one value per column: ``{type, shape}`` or ``{type, varlen}``.

    Mirrors the parse spec of ``tf.io.parse_example``: ``shape`` is ``tf.io.FixedLenFeature(shape, dtype)``,
    ``varlen: sparse`` is ``tf.io.VarLenFeature(dtype)`` (a ``tf.SparseTensor``), ``varlen: ragged`` is
    ``tf.io.RaggedFeature(dtype)`` (a ``tf.RaggedTensor``), ``type: bytes`` alone is one raw ``string`` value per
    record (an encoded image, kept for the model to decode). The feature reaches the model as it is parsed, with
    no statistics, filling or scaling, under its name in the features dict (a model_fn's named features).
    """

    type: Literal["float", "int", "string", "bytes"] = Field(
        description="The value type: `float` (float_list -> float32), `int` (int64_list -> int64), `string` or "
        "`bytes` (bytes_list -> string; `bytes` keeps the bytes raw, e.g. an encoded image)."
    )
    shape: list[int] | None = Field(
        default=None,
        description="Fixed shape of each record's values, e.g. [28, 28, 1] (784 values, row-major); the batch "
        "adds a first dimension. Every record must have exactly that many values.",
    )
    varlen: Literal["sparse", "ragged"] | None = Field(
        default=None,
        description="A variable number of values per record (e.g. tokens): a tf.SparseTensor (`sparse`, as "
        "tf.io.VarLenFeature) or a tf.RaggedTensor (`ragged`) of [batch, None].",
    )

    @field_validator("shape")
    @classmethod
    def _positive(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(size < 1 for size in value):
            raise ValueError("every dimension of `shape` must be at least 1")
        if value is not None and len(value) > 8:
            raise ValueError("at most 8 dimensions")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> TensorFeature:
        if self.shape is not None and self.varlen is not None:
            raise ValueError("set `shape` (a fixed number of values) or `varlen` (a variable number), not both")
        return self

    @property
    def is_tensor(self) -> bool:
        """Whether it is read as a tensor (a shape, varlen, or raw bytes), not as a one-value column."""
        return self.shape is not None or self.varlen is not None or self.type == "bytes"


#: A ``data.columns`` entry: a one-value column's type, or a tensor feature's parse spec.
ColumnSpec = Literal["float", "int", "string"] | TensorFeature


#: A missing-value policy: ``error``, ``drop``, ``mean``, ``median`` or ``{constant: V}``.
MissingPolicy = Literal["error", "drop", "mean", "median"] | ConstantFill


def policy_name(policy: MissingPolicy) -> str:
    """The policy as text: ``error``, ``drop``, ``mean``, ``median`` or ``constant``."""
    return policy if isinstance(policy, str) else "constant"


class DataConfig(StrictModel):
    """Input data: which files, which columns, how they are preprocessed and batched.

    Paths are relative to the config file's directory. Numeric feature columns
    are z-scored (``standardize``); text columns (and those listed in
    ``categorical``) are one-hot encoded. Every statistic (means, standard
    deviations, fill values, vocabularies) comes from the training split only.
    Rows become ``float32`` tensors ``features: [batch, n_features]`` and
    ``labels: [batch, 1]``.
    """

    train: str | list[str] | None = Field(
        default=None,
        description="Training data (or `input_fn`): a file, a glob (`shards/*.csv.gz`), a directory, or a list of "
        "them, relative to the config file. CSV (`.csv`, `.csv.gz`), TFRecord of tf.train.Example "
        "(`.tfrecord`, `.tfrecords`, optionally `.gz`), JSON lines (`.jsonl`, `.jsonl.gz`) or a plug-in format's files."
    )
    input_fn: str | None = Field(
        default=None,
        description="Your own input pipeline instead of `train`: an Estimator `input_fn` as `package.module:function` "
        "(beside the config first), called with `params` (graph.params as written), `mode` and `config` when it "
        "names them; it returns a tf.data.Dataset of (features, labels) or a (features, labels) tuple, which "
        "reaches the model_fn untouched. See docs/data.md.",
    )
    eval_input_fn: str | None = Field(
        default=None,
        description="With `input_fn`: the validation set's input_fn (`package.module:function`), read by the "
        "`evaluation` hook; it returns a finite tf.data.Dataset, read from its start at each evaluation.",
    )
    save_input_state: Literal["auto"] | bool = Field(
        default="auto",
        description="With `input_fn`: save the pipeline's position (its tf.data iterator state) with each "
        "checkpoint, so a resumed run continues where it stopped. `auto`: where TensorFlow can save it (not a "
        "py_function or from_generator pipeline: those restart, as under Estimator); `true`: refuse a pipeline "
        "whose state cannot be saved; `false`: restart the input_fn on resume. A shuffle buffer is saved whole "
        "in every checkpoint. See docs/data.md.",
    )
    format: str | None = Field(
        default=None,
        description="File format (a registered format: `csv`, `tfrecord`, `jsonl`, or a plug-in's; `hookrun "
        "validate` checks the name); default: from each file's name (`.csv[.gz]`, `.tfrecord[s][.gz]`, `.jsonl[.gz]`).",
    )
    columns: dict[str, ColumnSpec] | None = Field(
        default=None,
        description="TFRecord only: the value type of features (`float`: float_list, `int`: int64_list, `string`: "
        "bytes_list), overriding what the first records show, e.g. `{rooms: int, ocean_proximity: string}`. A "
        "feature listed here is a column even when the first record lacks it; it must have a value in the first "
        "200 records of the first training file. Or a tensor feature's parse spec, read as it is, not as a column: "
        "`image: {type: float, shape: [28, 28, 1]}`, `tokens: {type: string, varlen: sparse}` (or `ragged`), "
        "`jpeg: {type: bytes}` (raw bytes for the model to decode); these reach a model_fn's named features in "
        "the order listed here.",
    )
    label: str | None = Field(default=None, description="Name of the label column (required with `train`).")
    features: list[str] | None = Field(
        default=None, description="Feature columns, in order; default: every column but the label."
    )
    categorical: list[str] = Field(
        default_factory=list,
        description="Columns one-hot encoded with a vocabulary from the training split (a text label: class ids); "
        "columns holding text are categorical without being listed.",
    )
    validation: str | list[str] | None = Field(
        default=None,
        description="Validation data (a file, glob, directory or list, as `train`). Exclusive with `validation_split`.",
    )
    validation_split: float | None = Field(
        default=None,
        ge=MIN_SPLIT,
        le=1.0 - MIN_SPLIT,
        description="Fraction of the training rows held out for validation: a row is held out when a hash of its "
        "file name, line and `seed` falls below the fraction (the same rows every run). Exclusive with `validation`. "
        "Between 0.000001 and 0.999999; it must leave at least one training and one validation row.",
    )
    batch_size: Count = Field(default=32, description="Rows per step (rows).")
    epochs: Steps | None = Field(
        default=1, description="Passes over the data (count); null repeats forever."
    )
    shuffle: bool = Field(
        default=True, description="Shuffle the rows each epoch: the file order, then a buffer of `shuffle_buffer` rows."
    )
    shuffle_buffer: Count = Field(
        default=10_000,
        le=10_000_000,
        description="Rows held by the shuffle buffer (rows; memory: about 1.2 x rows x features x 4 bytes, 10,000 x "
        "13 features = 0.6 MB).",
    )
    max_categories: Count = Field(
        default=1_000,
        le=1_000_000,
        description="Most distinct values a categorical column (or a text label) may have (count); more is an error "
        "naming the cell, not thousands of one-hot features.",
    )
    seed: Seed | None = Field(
        default=0,
        description="Seed for shuffling, the validation split and weight initialisation: it seeds Python's `random`, "
        "NumPy and TensorFlow's graph-level seed before the builder is called (as keras.utils.set_random_seed), "
        "so two runs with one seed start from the same weights. null: a different start each run.",
    )
    missing: MissingPolicy = Field(
        default="error",
        description="An empty cell: `error` (names file and line), `drop` the row, fill with the training split's "
        "`mean` or `median`, or `{constant: V}`. The label is never filled (error or drop).",
    )
    missing_by_column: dict[str, MissingPolicy] | None = Field(
        default=None,
        description="Per-column missing-value policy, overriding `missing`, e.g. `{total_bedrooms: median}`.",
    )
    standardize: bool = Field(
        default=True,
        description="Scale each numeric feature to zero mean and unit variance, with statistics from the training "
        "split.",
    )
    label_scale: float | None = Field(
        default=None,
        ge=MIN_LABEL_SCALE,
        le=MAX_LABEL_SCALE,
        description="Divide a numeric label by this for training (label units); metrics stay in the label's units. "
        "Between 1e-18 and 1e18 (the metrics are multiplied back by it and its square, in float32).",
    )

    @field_validator("train", "validation")
    @classmethod
    def _paths(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list):
            if not value:
                raise ValueError("list at least one file, glob or directory")
            if any(not item.strip() for item in value):
                raise ValueError("an empty path in the list")
        elif isinstance(value, str) and not value.strip():
            raise ValueError("an empty path; name a file, glob or directory")
        return value

    @field_validator("input_fn", "eval_input_fn")
    @classmethod
    def _input_fn_path(cls, value: str | None) -> str | None:
        return check_import_path(value)

    @field_validator("columns")
    @classmethod
    def _some_columns(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None:
            if not value:
                raise ValueError("name at least one feature, e.g. {rooms: int}, or leave `columns` out")
            if any(not name.strip() for name in value):
                raise ValueError("an empty feature name")
        return value

    @field_validator("features")
    @classmethod
    def _unique_features(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not value:
                raise ValueError("list at least one feature, or leave `features` out to use every column")
            _no_repeats(value, "feature")
        return value

    @field_validator("categorical")
    @classmethod
    def _unique_categorical(cls, value: list[str]) -> list[str]:
        _no_repeats(value, "categorical column")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DataConfig:
        """Check the options that depend on each other (no file is read here)."""
        if self.input_fn is not None:
            return self._input_fn_only()
        if self.train is None:
            raise ValueError(
                "missing required key `train` (data files), or set `input_fn` (your own `package.module:input_fn`)"
            )
        if self.label is None:
            raise ValueError("missing required key `label`")
        if self.eval_input_fn is not None:
            raise ValueError("`eval_input_fn` goes with `input_fn`; with `train` files use `validation`")
        if self.save_input_state != "auto":
            raise ValueError(
                "`save_input_state` goes with `input_fn`; the built-in reader resumes by skipping the batches "
                "already trained (remove `save_input_state`)"
            )
        if self.validation is not None and self.validation_split is not None:
            raise ValueError("set `validation` (a CSV file) or `validation_split` (a fraction), not both")
        if self.columns is not None and self.format == "csv":
            raise ValueError(
                "`columns` sets the value types of TFRecord features; CSV columns take their kinds from the cells "
                "(list text columns read as categories in `categorical`)"
            )
        for name in self.tensor_features:
            if name == self.label:
                raise ValueError(f"columns.{name}: the label is one value per record; give it a type only")
            if name in self.categorical or name in (self.missing_by_column or {}):
                where = "categorical" if name in self.categorical else "missing_by_column"
                raise ValueError(
                    f"columns.{name} is a tensor feature, read as it is (no vocabulary, no filling); remove it from "
                    f"`{where}`"
                )
        if self.validation_split is not None and self.seed is None:
            raise ValueError("`validation_split` needs a `seed` so that a resumed run holds out the same rows")
        label_policy = (self.missing_by_column or {}).get(self.label)
        if label_policy is not None and policy_name(label_policy) not in ("error", "drop"):
            raise ValueError(
                f"missing_by_column.{self.label}: the label is never filled; use `error` or `drop` for it"
            )
        return self

    def _input_fn_only(self) -> DataConfig:
        """With ``input_fn`` the pipeline is the user's: the file and preprocessing keys have no meaning."""
        table_keys = (
            "train", "format", "columns", "label", "features", "categorical", "validation", "validation_split",
            "missing_by_column", "label_scale",
        )
        given = [key for key in table_keys if getattr(self, key) not in (None, [])]
        # (the saved config.yaml writes every default: a key is refused only when it differs from its default)
        given += [
            key for key in ("batch_size", "epochs", "shuffle", "shuffle_buffer", "max_categories", "missing",
                            "standardize")
            if getattr(self, key) != type(self).model_fields[key].get_default(call_default_factory=True)
        ]
        if given:
            raise ValueError(
                f"`{given[0]}` is for data files read by hookrun; with `input_fn` your input_fn reads, batches and "
                f"repeats the data (remove `{given[0]}`, or remove `input_fn` to use the built-in reader)"
            )
        return self

    @property
    def tensor_features(self) -> dict[str, TensorFeature]:
        """The ``columns`` entries read as tensors (a shape, varlen or raw bytes), in the order listed."""
        return {
            name: spec for name, spec in (self.columns or {}).items()
            if isinstance(spec, TensorFeature) and spec.is_tensor
        }

    def column_types(self) -> dict[str, str]:
        """The ``columns`` entries read as one-value columns: name -> ``float``, ``int`` or ``string``."""
        return {
            name: spec if isinstance(spec, str) else spec.type
            for name, spec in (self.columns or {}).items()
            if not (isinstance(spec, TensorFeature) and spec.is_tensor)
        }

    def policy_for(self, column: str) -> MissingPolicy:
        """The missing-value policy of ``column``: ``missing_by_column[column]``, else ``missing``."""
        return (self.missing_by_column or {}).get(column, self.missing)


def _no_repeats(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} is listed twice")
        seen.add(name)
