"""``feature_columns:`` in YAML: one entry per ``tf.compat.v1.feature_column`` constructor, its arguments by name.

Each entry is a mapping with exactly one *kind* key, whose value is the feature key (or the column it wraps),
and that constructor's arguments beside it::

    - {numeric: median_income, normalizer: zscore}
    - {bucketized: latitude, boundaries: [34, 36, 38], name: lat}
    - {vocabulary_list: ocean_proximity}                      # vocabulary: from_data (default) or a list
    - {embedding: {vocabulary_list: ocean_proximity}, dimension: 4}
    - {crossed: [lat, lon], hash_bucket_size: 1000}

An entry's ``name`` lets another entry refer to it (``crossed``, ``embedding``, ``indicator``). Checked here
without TensorFlow; :mod:`hookrun.runner.graph.builders.canned.columns` turns them into TensorFlow's columns.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from hookrun.common.suggest import did_you_mean
from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import Count

FROM_DATA = "from_data"


class _Column(StrictModel):
    name: str | None = Field(default=None, description="A name other entries use to refer to this column.")


class NumericColumn(_Column):
    """``tf.compat.v1.feature_column.numeric_column(key, default_value, normalizer_fn)``."""

    numeric: str = Field(description="The feature key.")
    normalizer: Literal["none", "zscore"] = Field(
        default="none",
        description="`zscore`: (x - mean) / std with the training split's statistics (from_data) or `mean`/`std`.",
    )
    mean: float | None = Field(default=None, description="zscore's mean (default: from the data).")
    std: float | None = Field(default=None, gt=0, description="zscore's standard deviation (default: from the data).")
    default_value: float | None = Field(default=None, description="The value of a missing feature.")


class BucketizedColumn(_Column):
    """``bucketized_column(numeric_column(key), boundaries)``."""

    bucketized: str | dict[str, Any] = Field(description="The feature key, or a `numeric` entry.")
    boundaries: list[float] = Field(min_length=1, description="Sorted bucket boundaries, in the feature's units.")


class VocabularyListColumn(_Column):
    """``categorical_column_with_vocabulary_list(key, vocabulary_list, default_value, num_oov_buckets)``."""

    vocabulary_list: str = Field(description="The feature key.")
    vocabulary: list[str] | list[int] | Literal["from_data"] = Field(
        default=FROM_DATA, description="The values, or `from_data`: the training split's vocabulary."
    )
    num_oov_buckets: int = Field(default=0, ge=0, description="Buckets hashed for values not in the vocabulary.")
    default_value: int = Field(default=-1, description="The id of a value not in the vocabulary (no OOV buckets).")


class VocabularyFileColumn(_Column):
    """``categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size, num_oov_buckets)``."""

    vocabulary_file: str = Field(description="The feature key.")
    file: str = Field(
        description="The vocabulary file, one value a line (`${config_dir}/vocab.txt`: beside the config)."
    )
    vocabulary_size: Count | None = Field(default=None, description="Lines to read (default: all).")
    num_oov_buckets: int = Field(default=0, ge=0, description="Buckets hashed for values not in the file.")
    default_value: int | None = Field(default=None, description="The id of a value not in the file.")


class IdentityColumn(_Column):
    """``categorical_column_with_identity(key, num_buckets, default_value)``."""

    identity: str = Field(description="The feature key (integer ids).")
    num_buckets: Count = Field(description="Ids are 0 .. num_buckets-1.")
    default_value: int | None = Field(default=None, description="The id of an out-of-range value.")


class HashBucketColumn(_Column):
    """``categorical_column_with_hash_bucket(key, hash_bucket_size)``."""

    hash_bucket: str = Field(description="The feature key.")
    hash_bucket_size: int = Field(gt=1, le=2**31 - 1, description="Number of hash buckets (> 1).")


class EmbeddingColumn(_Column):
    """``embedding_column(categorical_column, dimension, combiner, max_norm, trainable)``."""

    embedding: str | dict[str, Any] = Field(description="A categorical entry, or the name of one.")
    dimension: Count = Field(description="The embedding's width (>= 1).")
    combiner: Literal["mean", "sqrtn", "sum"] = Field(default="mean", description="How multivalent ids combine.")
    max_norm: float | None = Field(default=None, gt=0, description="Clip embeddings to this L2 norm.")
    trainable: bool = Field(default=True, description="Train the embedding.")


class IndicatorColumn(_Column):
    """``indicator_column(categorical_column)``: a one-hot (multi-hot) of a categorical column."""

    indicator: str | dict[str, Any] = Field(description="A categorical entry, or the name of one.")


class CrossedColumn(_Column):
    """``crossed_column(keys, hash_bucket_size, hash_key)``."""

    crossed: list[str | dict[str, Any]] = Field(
        min_length=2, description="Feature keys (strings, hashed), or categorical/bucketized entries or their names."
    )
    hash_bucket_size: Count = Field(description="Number of hash buckets of the cross.")
    hash_key: int | None = Field(default=None, description="The cross's hash key (TensorFlow's default if unset).")


#: YAML kind key -> (model, TensorFlow constructor, R tfestimators function).
KINDS: dict[str, tuple[type[_Column], str, str]] = {
    "numeric": (NumericColumn, "numeric_column", "column_numeric"),
    "bucketized": (BucketizedColumn, "bucketized_column", "column_bucketized"),
    "vocabulary_list": (
        VocabularyListColumn,
        "categorical_column_with_vocabulary_list",
        "column_categorical_with_vocabulary_list",
    ),
    "vocabulary_file": (
        VocabularyFileColumn,
        "categorical_column_with_vocabulary_file",
        "column_categorical_with_vocabulary_file",
    ),
    "identity": (IdentityColumn, "categorical_column_with_identity", "column_categorical_with_identity"),
    "hash_bucket": (HashBucketColumn, "categorical_column_with_hash_bucket", "column_categorical_with_hash_bucket"),
    "embedding": (EmbeddingColumn, "embedding_column", "column_embedding"),
    "indicator": (IndicatorColumn, "indicator_column", "column_indicator"),
    "crossed": (CrossedColumn, "crossed_column", "column_crossed"),
}

CATEGORICAL = ("vocabulary_list", "vocabulary_file", "identity", "hash_bucket")
#: Kinds a cross may take (TensorFlow: categorical columns other than hashed embeddings, or bucketized ones).
CROSSABLE = (*CATEGORICAL, "bucketized")
#: Dense kinds (what ``input_layer``, the DNN's input, takes).
DENSE = ("numeric", "bucketized", "embedding", "indicator")


class ColumnError(ValueError):
    """A bad ``feature_columns`` entry; the message starts with its place (``dnn_feature_columns[1].embedding``)."""


def kind_of(column: _Column) -> str:
    """The kind key of a parsed column (``"numeric"``)."""
    for kind, (model, _, _) in KINDS.items():
        if type(column) is model:
            return kind
    raise TypeError(type(column).__name__)


def _parse(value: Any, where: str) -> _Column:
    if not isinstance(value, dict):
        raise ColumnError(f"{where}: a column is a mapping such as `{{numeric: KEY}}`, got {type(value).__name__}")
    kinds = [key for key in value if key in KINDS]
    if len(kinds) != 1:
        if kinds:
            raise ColumnError(f"{where}: one column kind per entry, got {', '.join(kinds)}")
        unknown = next((key for key in value if key not in ("name",)), "")
        raise ColumnError(
            f"{where}: unknown column kind `{unknown}`{did_you_mean(str(unknown), KINDS)} "
            f"(kinds: {', '.join(KINDS)})"
        )
    kind = kinds[0]
    model = KINDS[kind][0]
    try:
        column = model.model_validate(value)
    except ValidationError as err:
        first = err.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields)
            raise ColumnError(
                f"{where}.{place}: not an argument of {KINDS[kind][1]}{did_you_mean(place, model.model_fields)} "
                f"(arguments: {allowed})"
            ) from None
        message = str(first["msg"]).replace("Input should be", "must be", 1)
        raise ColumnError(f"{where}.{place}: {message}") from None
    return column


def parse_columns(
    entries: Any, field: str, named: dict[str, _Column] | None = None, refs: bool = True
) -> list[_Column]:
    """Check one ``*feature_columns`` list: every entry, its nested columns, and the names it refers to.

    Args:
        entries: the YAML list.
        field: its key (``feature_columns``, ``dnn_feature_columns``, ``linear_feature_columns``), for messages.
        named: columns named in the other lists of the same builder (updated with this list's names).
        refs: check the names the entries refer to (False: each entry alone, as names may be in another list).

    Returns:
        The parsed entries (nested ones stay dicts; :func:`resolve` parses them again where used).

    Raises:
        ColumnError: the first bad entry: an unknown kind (with a did-you-mean), a bad argument, a nested
            column of the wrong kind (a numeric in a cross, a non-categorical in an embedding), a name used twice,
            or a reference to a name no entry has.
    """
    if not isinstance(entries, list) or not entries:
        raise ColumnError(f"{field}: a non-empty list of columns such as `- {{numeric: KEY}}`")
    named = {} if named is None else named
    parsed = []
    for index, entry in enumerate(entries):
        where = f"{field}[{index}]"
        column = _parse(entry, where)
        if column.name is not None:
            if column.name in named and named[column.name] != column:
                raise ColumnError(f"{where}.name: `{column.name}` names two columns; names are unique")
            named[column.name] = column
        parsed.append((where, column))
    for where, column in parsed if refs else ():
        _check_refs(column, where, named)
    return [column for _, column in parsed]


def resolve(value: str | dict[str, Any], where: str, named: dict[str, _Column], allowed: tuple[str, ...]) -> Any:
    """A nested column: a name (the named entry), or an entry (parsed); a string not named is returned as is.

    Raises:
        ColumnError: the column's kind is not in ``allowed``.
    """
    if isinstance(value, str):
        if value not in named:
            return value
        column = named[value]
    else:
        column = _parse(value, where)
        _check_refs(column, where, named)
    kind = kind_of(column)
    if kind not in allowed:
        raise ColumnError(f"{where}: a {kind} column here; this takes {' or '.join(allowed)} columns")
    return column


def _check_refs(column: _Column, where: str, named: dict[str, _Column]) -> None:
    kind = kind_of(column)
    if kind in ("embedding", "indicator"):
        value = getattr(column, kind)
        if isinstance(value, str) and value not in named:
            raise ColumnError(
                f"{where}.{kind}: unknown column `{value}` (give a categorical entry such as "
                f"`{{{kind}: {{vocabulary_list: {value}}}}}`, or the `name` of one){did_you_mean(value, named)}"
            )
        resolve(value, f"{where}.{kind}", named, CATEGORICAL)
    elif kind == "bucketized" and isinstance(column.bucketized, (str, dict)):
        if isinstance(column.bucketized, dict) or column.bucketized in named:
            resolve(column.bucketized, f"{where}.bucketized", named, ("numeric",))
        if sorted(column.boundaries) != column.boundaries:
            raise ColumnError(f"{where}.boundaries: must be sorted ascending")
    elif kind == "crossed":
        for index, item in enumerate(column.crossed):
            place = f"{where}.crossed[{index}]"
            target = named.get(item) if isinstance(item, str) else None
            if isinstance(item, str) and target is None and item in _numeric_keys(named):
                target = NumericColumn(numeric=item)
            if target is not None and kind_of(target) == "numeric" or (
                isinstance(item, dict) and "numeric" in item
            ):
                shown = item if isinstance(item, str) else item.get("numeric")
                raise ColumnError(
                    f"{place}: a crossed column of numerics: `{shown}` is numeric; cross a "
                    f"`{{bucketized: {shown if isinstance(shown, str) else 'KEY'}, boundaries: [...]}}` instead"
                )
            resolve(item, place, named, CROSSABLE)


def _numeric_keys(named: dict[str, _Column]) -> set[str]:
    return {column.numeric for column in named.values() if isinstance(column, NumericColumn)}


def dense_only(columns: list[_Column], field: str) -> None:
    """Refuse a categorical column in a DNN's list (``input_layer`` takes dense columns only).

    Raises:
        ColumnError: naming the entry and the fix (wrap it in ``embedding`` or ``indicator``).
    """
    for index, column in enumerate(columns):
        kind = kind_of(column)
        if kind not in DENSE:
            raise ColumnError(
                f"{field}[{index}]: a {kind} column in a DNN; wrap it: `{{indicator: {{{kind}: ...}}}}` or "
                f"`{{embedding: {{{kind}: ...}}, dimension: N}}`"
            )
