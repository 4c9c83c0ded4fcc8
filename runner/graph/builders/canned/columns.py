"""YAML ``feature_columns`` entries (:mod:`hookrun.config_schemas.feature_columns`) as TensorFlow's feature columns.

Each kind becomes its ``tf.compat.v1.feature_column`` constructor, arguments passed by name. ``from_data`` takes a
categorical column's vocabulary, or a numeric column's ``zscore`` mean and standard deviation, from the training
split's statistics pass (``preprocessing.json``; the runner hands it to a named-features builder as
``params["feature_columns"]``).

:func:`raw_features` undoes what the built-in reader did to named features, so the columns read each column's
values as read: a numeric column's z-score is turned back into its units, and a text column is its text
(``<column>/raw``), not the reader's ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookrun.config_schemas.feature_columns import (
    CATEGORICAL,
    CROSSABLE,
    FROM_DATA,
    ColumnError,
    _Column,
    dense_only,
    kind_of,
    parse_columns,
    resolve,
)

#: The reader's key suffix of a text column's text (``hookrun.runner.data.streaming.RAW_SUFFIX``).
RAW_SUFFIX = "/raw"


def _tf() -> Any:
    from hookrun.runner.tf_env import import_tensorflow

    return import_tensorflow()


class ColumnBuilder:
    """Builds TensorFlow columns from parsed entries; one per builder call (names are shared between its lists).

    Args:
        described: the runner's description of the data's columns (column -> ``{"kind": "numeric", "mean",
            "std"}`` or ``{"kind": "categorical", "vocabulary": [...]}``), or None (an ``input_fn``: no
            ``from_data``).
    """

    def __init__(self, described: Mapping[str, Any] | None) -> None:
        self.described = dict(described or {})
        self.named: dict[str, _Column] = {}
        self.identity_keys: set[str] = set()
        #: feature key -> the first entry reading it (``dnn_feature_columns[0].numeric``), for messages.
        self.keys: dict[str, str] = {}

    def parse(self, params: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, list[_Column]]:
        """Parse each of ``fields`` present in ``params`` (names shared across them).

        Raises:
            ColumnError: a bad entry (see :func:`hookrun.config_schemas.feature_columns.parse_columns`).
        """
        return {field: parse_columns(params[field], field, self.named) for field in fields if params.get(field)}

    def build(self, columns: list[_Column], field: str, dense: bool = False) -> list[Any]:
        """The TensorFlow columns of one list.

        Args:
            columns: parsed entries.
            field: the list's key, for messages.
            dense: a DNN's list (categorical entries refused: wrap them in ``embedding`` or ``indicator``).

        Raises:
            ColumnError: a categorical entry in a DNN's list, or a ``from_data`` the data cannot give.
        """
        if dense:
            dense_only(columns, field)
        return [self.column(column, f"{field}[{index}]") for index, column in enumerate(columns)]

    def column(self, column: _Column, where: str) -> Any:
        """One TensorFlow column."""
        fc = _tf().compat.v1.feature_column
        kind = kind_of(column)
        key = getattr(column, kind)
        if isinstance(key, str) and kind not in ("embedding", "indicator", "bucketized"):
            self.keys.setdefault(key, f"{where}.{kind}")
        if kind == "numeric":
            return fc.numeric_column(
                column.numeric, default_value=column.default_value, normalizer_fn=self._normalizer(column, where)
            )
        if kind == "bucketized":
            source = column.bucketized
            nested = resolve(source, f"{where}.bucketized", self.named, ("numeric",))
            if isinstance(nested, str):
                self.keys.setdefault(nested, f"{where}.bucketized")
                numeric = fc.numeric_column(nested)
            else:
                numeric = self.column(nested, f"{where}.bucketized")
            return fc.bucketized_column(numeric, boundaries=list(column.boundaries))
        if kind == "vocabulary_list":
            vocabulary = column.vocabulary
            if vocabulary == FROM_DATA:
                vocabulary = self._vocabulary(column.vocabulary_list, where)
            return fc.categorical_column_with_vocabulary_list(
                column.vocabulary_list,
                list(vocabulary),
                default_value=column.default_value,
                num_oov_buckets=column.num_oov_buckets,
            )
        if kind == "vocabulary_file":
            return fc.categorical_column_with_vocabulary_file(
                column.vocabulary_file,
                column.file,
                vocabulary_size=column.vocabulary_size,
                num_oov_buckets=column.num_oov_buckets,
                default_value=column.default_value,
            )
        if kind == "identity":
            self.identity_keys.add(column.identity)
            return fc.categorical_column_with_identity(
                column.identity, column.num_buckets, default_value=column.default_value
            )
        if kind == "hash_bucket":
            return fc.categorical_column_with_hash_bucket(column.hash_bucket, column.hash_bucket_size)
        if kind == "embedding":
            categorical = self._nested(column.embedding, f"{where}.embedding", CATEGORICAL)
            return fc.embedding_column(
                categorical,
                column.dimension,
                combiner=column.combiner,
                max_norm=column.max_norm,
                trainable=column.trainable,
            )
        if kind == "indicator":
            return fc.indicator_column(self._nested(column.indicator, f"{where}.indicator", CATEGORICAL))
        keys = []
        for index, item in enumerate(column.crossed):
            place = f"{where}.crossed[{index}]"
            if not self._raw_key(item):
                keys.append(self._nested(item, place, CROSSABLE))
                continue
            if (self.described.get(item) or {}).get("kind") == "numeric":
                raise ColumnError(
                    f"{place}: a crossed column of numerics: `{item}` is a numeric column of the data; cross a "
                    f"`{{bucketized: {item}, boundaries: [...]}}` instead"
                )
            self.keys.setdefault(item, place)
            keys.append(item)
        kwargs = {"hash_key": column.hash_key} if column.hash_key is not None else {}
        return fc.crossed_column(keys, column.hash_bucket_size, **kwargs)

    def check_keys(self, available: set[str]) -> None:
        """Refuse a feature key the features do not have, naming the entry (with a did-you-mean).

        Args:
            available: the data's columns (the reader's) or the ``input_fn``'s feature keys.

        Raises:
            ColumnError: the first entry reading an unknown key.
        """
        from hookrun.common.suggest import did_you_mean

        for key, where in self.keys.items():
            if key not in available:
                known = ", ".join(sorted(available))
                hint = did_you_mean(key, available)
                raise ColumnError(f"{where}: unknown column `{key}`{hint} (the features: {known})")

    def _raw_key(self, item: Any) -> bool:
        return isinstance(item, str) and item not in self.named

    def _nested(self, value: Any, where: str, allowed: tuple[str, ...]) -> Any:
        nested = resolve(value, where, self.named, allowed)
        if isinstance(nested, str):
            raise ColumnError(f"{where}: unknown column `{nested}`")
        return self.column(nested, where)

    def _vocabulary(self, key: str, where: str) -> list[Any]:
        described = self.described.get(key)
        if not described or described.get("kind") != "categorical":
            known = ", ".join(k for k, v in self.described.items() if v.get("kind") == "categorical") or "none"
            raise ColumnError(
                f"{where}.vocabulary: from_data needs a text column of the data; `{key}` is "
                f"{'not one' if described else 'not a column of the data'} (text columns: {known}); "
                "write the vocabulary out"
            )
        return list(described["vocabulary"])

    def _normalizer(self, column: Any, where: str) -> Any:
        if column.normalizer != "zscore":
            return None
        mean, std = column.mean, column.std
        if mean is None or std is None:
            described = self.described.get(column.numeric) or {}
            mean = described.get("mean") if mean is None else mean
            std = described.get("std") if std is None else std
        if mean is None or std is None:
            raise ColumnError(
                f"{where}.normalizer: zscore from_data needs the training statistics of `{column.numeric}` "
                "(a numeric column of the data files, with data.standardize on); or give `mean` and `std`"
            )
        mean, std = float(mean), float(std)
        return lambda x: (x - mean) / std


def raw_features(features: Mapping[str, Any], described: Mapping[str, Any] | None, identity_keys: set[str]) -> dict:
    """The features as read: undo the built-in reader's z-score and ids (named features), cast identity ids.

    Args:
        features: what the builder got: the reader's named features (numeric ``float32 [batch, 1]`` z-scored,
            text as ids plus ``<column>/raw``) or an ``input_fn``'s dict (passed as is).
        described: the runner's column description (with ``mean``/``std`` of z-scored columns), or None.
        identity_keys: keys read by ``identity`` columns (integer ids: a float feature is cast to ``int64``).

    Returns:
        Feature key -> tensor, each column's values in its own units or its text.
    """
    tf = _tf()
    out = dict(features)
    for key, spec in (described or {}).items():
        if spec.get("kind") == "categorical" and f"{key}{RAW_SUFFIX}" in out:
            out[key] = out.pop(f"{key}{RAW_SUFFIX}")
        elif spec.get("kind") == "numeric" and spec.get("std") is not None and key in out:
            out[key] = out[key] * float(spec["std"]) + float(spec["mean"])
    for key in identity_keys:
        if key in out and hasattr(out[key], "dtype") and out[key].dtype.is_floating:
            out[key] = tf.cast(tf.round(out[key]), tf.int64)
    return out


def runner_values(params: Any, config: Any) -> tuple[Mapping[str, Any] | None, float]:
    """The runner's column description and ``label_scale``: ``config.hookrun``'s, else ``params``' (the builder form).

    Args:
        params: the builder's params (a builder of the ``fn(features, labels, params)`` form finds them there).
        config: a model_fn's ``config`` (:class:`hookrun.runner.graph.run_config.RunInfo`), or None.

    Returns:
        ``(description, label_scale)``: column name -> description (None without named features from data files),
        and the label scale (1.0 without ``data.label_scale``).
    """
    values = getattr(config, "hookrun", None)
    if values is not None:
        described = getattr(values, "feature_columns", None)
        scale = getattr(values, "label_scale", None)
    else:
        params = params if isinstance(params, Mapping) else {}
        described, scale = params.get("feature_columns"), params.get("label_scale")
    return (described if isinstance(described, Mapping) else None), float(scale or 1.0)
