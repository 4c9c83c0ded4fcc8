"""The fitted preprocessing of a run: missing values, z-scores, one-hot vocabularies, the label's ids or scale.

:meth:`Preprocessor.fit` learns every statistic from the training split only
(numpy, float64): the fill value of each column with a ``mean``, ``median``
or ``constant`` missing-value policy, then, on the filled training rows, each
numeric feature's mean and standard deviation and each categorical feature's
vocabulary (sorted), and the label's vocabulary (a text label) or scale.
:meth:`Preprocessor.transform` applies the same state to any rows (the
training split, the validation split, a resumed run's data): a category not
in the vocabulary becomes an all-zero vector. The state is saved as
``<run_dir>/preprocessing.json`` and reused when a run resumes, so the
weights always see the inputs they were trained on.

No TensorFlow here: the quick checks before training (``hookrun validate``)
fit and apply it on the first rows of the file.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.common.errors import DataError, DataWarning, SetupError
from hookrun.common.files import loads_json
from hookrun.config_schemas.builders import BUILDER_PARAMS, CLASSIFIERS
from hookrun.config_schemas.data import DataConfig, MissingPolicy, policy_name
from hookrun.config_schemas.graph import GraphConfig
from hookrun.runner.data.reader import CATEGORICAL, NUMERIC, RawColumns, TrainingData

#: Version of the ``preprocessing.json`` layout written by :meth:`Preprocessor.save`.
FORMAT = 1


def _policy_json(policy: MissingPolicy) -> str | dict[str, float | str]:
    """A policy as plain JSON data: ``"median"`` or ``{"constant": V}``."""
    return policy if isinstance(policy, str) else {"constant": policy.constant}


def _policy_loc(config: DataConfig, name: str) -> tuple[str, ...]:
    """Where a column's policy is set: ``data.missing_by_column.<name>`` or ``data.missing``."""
    return ("data", "missing_by_column", name) if name in (config.missing_by_column or {}) else ("data", "missing")


@dataclass
class ColumnState:
    """The fitted state of one feature column.

    Attributes:
        name: the column.
        kind: ``numeric`` or ``categorical``.
        missing: its missing-value policy as JSON (``"error"``, ``"drop"``, ``"mean"``, ``"median"``,
            ``{"constant": V}``).
        fill: the value put in an empty cell (the column's units; text for a categorical column), or
            None when the policy fills nothing.
        mean: training mean after filling (the column's units), or None (categorical, or no ``standardize``).
        std: training standard deviation after filling (the column's units; 1 for a constant column), or None.
        vocabulary: a categorical column's categories seen in training, sorted; one output per entry.
        missing_rows: empty cells of the column in the kept training rows (count).
    """

    name: str
    kind: str
    missing: str | dict[str, Any]
    fill: float | str | None = None
    mean: float | None = None
    std: float | None = None
    vocabulary: list[str] | None = None
    missing_rows: int = 0

    def output_names(self) -> list[str]:
        """Names of this column's features: ``[name]``, or ``name=value`` per vocabulary entry."""
        if self.kind == CATEGORICAL:
            return [f"{self.name}={value}" for value in self.vocabulary or []]
        return [self.name]


@dataclass
class LabelState:
    """The fitted state of the label.

    Attributes:
        name: the label column.
        kind: ``numeric`` or ``categorical``.
        missing: ``"error"`` or ``"drop"`` (labels are never filled; a fill policy acts as ``error``).
        vocabulary: a categorical label's classes seen in training, sorted; class id = index.
        scale: ``data.label_scale``: labels are divided by it for training (label units), or None.
    """

    name: str
    kind: str
    missing: str
    vocabulary: list[str] | None = None
    scale: float | None = None


@dataclass
class Preprocessor:
    """Missing values, standardisation, one-hot encoding and label mapping, fitted on the training split.

    Mirrors what ``tf.feature_column.numeric_column(normalizer_fn=...)`` and
    ``indicator_column(categorical_column_with_vocabulary_list(...))`` do for a
    ``tf.estimator`` model, computed once in numpy instead of in the graph.

    Attributes:
        columns: one state per feature column, in feature order.
        label: the label's state.
        standardize: whether numeric features are z-scored.
        split: how training and validation rows were split (see :class:`hookrun.runner.data.RawData`).
    """

    columns: list[ColumnState]
    label: LabelState
    standardize: bool = True
    split: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ facts

    @property
    def feature_names(self) -> list[str]:
        """Names of the features' columns after encoding, e.g. ``ocean_proximity=NEAR BAY``."""
        return [name for column in self.columns for name in column.output_names()]

    @property
    def kinds(self) -> dict[str, str]:
        """Column -> kind, features then the label (to parse a resumed run's files the same way)."""
        return {**{c.name: c.kind for c in self.columns}, self.label.name: self.label.kind}

    @property
    def label_scale(self) -> float:
        """The factor that turns training labels back into label units (1 without ``label_scale``)."""
        return float(self.label.scale or 1.0)

    # ------------------------------------------------------------------ fit and apply

    @classmethod
    def fit(
        cls, raw: RawColumns, config: DataConfig, split: dict[str, Any] | None = None, max_categories: int | None = None
    ) -> Preprocessor:
        """Learn the state from the training rows only (all in memory): :class:`Statistics` over one chunk.

        Steps: drop rows with an empty cell in a ``drop`` column (or the label); check no ``error``
        column has an empty cell; compute fill values (``mean``/``median`` of the present cells,
        or the constant); then, on the filled rows, each numeric column's mean and standard
        deviation and each categorical column's sorted vocabulary; the label's vocabulary (text) or
        ``label_scale`` (numbers).

        Args:
            raw: the training split's columns.
            config: the ``data:`` section (policies, ``standardize``, ``label_scale``, ``max_categories``).
            split: the split description to save with the state.
            max_categories: overrides ``data.max_categories``.

        Returns:
            The fitted preprocessor.

        Raises:
            DataError: see :meth:`Statistics.update` and :meth:`Statistics.finish`.
        """
        stats = Statistics(raw.kinds, config, split, max_categories)
        stats.update(raw)
        return stats.finish()

    def rows_to_keep(self, raw: RawColumns) -> np.ndarray:
        """Which rows survive the ``drop`` policies; checks the ``error`` policies on them.

        Args:
            raw: rows parsed with this state's column kinds.

        Returns:
            ``bool [n_rows]``.

        Raises:
            DataError: the first row (in file order) with an empty cell in an ``error`` column, or in a
                categorical column under ``mean``/``median``; the message names file, line and column.
        """
        keep = np.ones(raw.num_rows, dtype=bool)
        checks: list[tuple[str, str]] = []
        for name, policy in [
            *((c.name, policy_name_json(c.missing)) for c in self.columns),
            (self.label.name, self.label.missing),
        ]:
            if policy == "drop":
                keep &= ~raw.missing(name)
            elif policy == "error" or (raw.kinds[name] == CATEGORICAL and policy in ("mean", "median")):
                checks.append((name, policy))
        first: tuple[int, int, str, str] | None = None
        for name, policy in checks:
            bad = np.flatnonzero(raw.missing(name) & keep)
            if bad.size:
                candidate = (int(bad[0]), raw.positions[name], name, policy)
                first = candidate if first is None or candidate[:2] < first[:2] else first
        if first is not None:
            row, _, name, policy = first
            where = raw.where(row, name)
            if name == self.label.name:
                raise DataError(
                    f"{where} is empty; a label is never filled: fill it, or drop such rows with "
                    f"`data.missing_by_column: {{{name}: drop}}`",
                    loc=_key_loc(raw),
                )
            if policy != "error":
                raise DataError(
                    f"{where} is empty, and the column is categorical: `{policy}` needs numbers; use "
                    f"`data.missing_by_column: {{{name}: {{constant: VALUE}}}}` or `drop`",
                    loc=_key_loc(raw),
                )
            raise DataError(
                f"{where} is empty; fill it, or set `data.missing: drop` (or mean, median, {{constant: V}}; "
                "per column: `data.missing_by_column`)",
                loc=_key_loc(raw),
            )
        return keep

    def transform(self, raw: RawColumns, strict_labels: bool = True) -> TrainingData:
        """Apply the state to rows: drop, fill, z-score, one-hot, map or scale the label.

        Args:
            raw: rows parsed with this state's column kinds (:attr:`kinds`).
            strict_labels: a text label outside the training vocabulary is an error; False maps it to
                class 0 (the quick check on a file's first rows, whose split is not known).

        Returns:
            ``float32`` arrays: features ``[n_kept, len(feature_names)]``, labels ``[n_kept, 1]``
            (divided by the label scale, or class ids).

        Raises:
            DataError: see :meth:`rows_to_keep`; a label class not seen in training (names file and line).
        """
        keep = self.rows_to_keep(raw)
        rows = raw.take(keep)
        blocks: list[np.ndarray] = []
        for column in self.columns:
            values = rows.values[column.name]
            missing = rows.missing(column.name)
            if column.kind == NUMERIC:
                filled = np.where(missing, column.fill if column.fill is not None else np.nan, values)
                if column.mean is not None and column.std is not None:
                    with np.errstate(invalid="ignore", over="ignore"):  # infinite cells: warned about in fit
                        filled = (filled - column.mean) / column.std
                blocks.append(filled[:, None])
            else:
                index = {value: i for i, value in enumerate(column.vocabulary or [])}
                onehot = np.zeros((rows.num_rows, len(index)), dtype=np.float64)
                for row, value in enumerate(values):
                    position = index.get(column.fill if value is None else value)
                    if position is not None:
                        onehot[row, position] = 1.0
                blocks.append(onehot)
        features = np.concatenate(blocks, axis=1) if blocks else np.zeros((rows.num_rows, 0))
        return TrainingData(
            features=features.astype(np.float32),
            labels=self._labels(rows, strict_labels)[:, None].astype(np.float32),
            feature_names=self.feature_names,
            label_name=self.label.name,
            source=raw.source,
            dropped_rows=int((~keep).sum()),
        )

    def _labels(self, rows: RawColumns, strict: bool) -> np.ndarray:
        values = rows.values[self.label.name]
        if self.label.kind == NUMERIC:
            return values / self.label_scale
        index = {value: i for i, value in enumerate(self.label.vocabulary or [])}
        ids = np.zeros(rows.num_rows, dtype=np.float64)
        for row, value in enumerate(values):
            if value in index:
                ids[row] = index[value]
            elif strict:
                raise DataError(
                    f"{rows.where(row, self.label.name)} has class {value!r}, which the training split does not "
                    f"have (its classes: {', '.join(self.label.vocabulary or [])}); a model cannot learn it",
                    loc=_key_loc(rows),
                )
        return ids

    # ------------------------------------------------------------------ resume

    def differences(self, config: DataConfig) -> list[str]:
        """What the config asks for that this (saved) state was not fitted with.

        Returns:
            One short description per difference (feature columns, a column declared categorical,
            a missing-value policy, ``standardize``, ``label_scale``, the label); empty when it matches.
        """
        diffs: list[str] = []
        names = [c.name for c in self.columns]
        if config.features is not None and list(config.features) != names:
            diffs.append(f"features {names} -> {list(config.features)}")
        if config.label != self.label.name:
            diffs.append(f"label {self.label.name!r} -> {config.label!r}")
        for column in self.columns:
            if column.name in config.categorical and column.kind != CATEGORICAL:
                diffs.append(f"{column.name!r} is now categorical")
            if _policy_json(config.policy_for(column.name)) != column.missing:
                diffs.append(
                    f"missing-value policy of {column.name!r} {column.missing} -> "
                    f"{_policy_json(config.policy_for(column.name))}"
                )
        if config.standardize != self.standardize:
            diffs.append(f"standardize {self.standardize} -> {config.standardize}")
        if self.label.kind == NUMERIC and config.label_scale != self.label.scale:
            diffs.append(f"label_scale {self.label.scale} -> {config.label_scale}")
        return diffs

    def check_resumable(self, config: DataConfig, split: dict[str, Any], path: Path) -> None:
        """Check a saved state fits the config and the data's split before a resumed run reuses it.

        Args:
            config: the ``data:`` section.
            split: the current split description (:attr:`hookrun.runner.data.RawData.split`).
            path: the state file, for the message.

        Raises:
            SetupError: the config or the data changed since the state was saved.
        """
        diffs = self.differences(config)
        if self.split and not same_split(self.split, split):
            diffs.append(f"rows/split {self.split} -> {split}")
        if diffs:
            raise SetupError(
                f"{path}: the run's saved preprocessing does not match the config or data ({'; '.join(diffs)}); "
                "use a new run directory, or restore the config"
            )

    # ------------------------------------------------------------------ files

    def to_json(self) -> dict[str, Any]:
        """The state as JSON data: ``format``, ``feature_names``, ``columns``, ``label``, ``standardize``, ``split``."""
        return {
            "format": FORMAT,
            "feature_names": self.feature_names,
            "standardize": self.standardize,
            "columns": [asdict(c) for c in self.columns],
            "label": asdict(self.label),
            "split": self.split,
        }

    def save(self, path: Path) -> None:
        """Write the state as JSON (atomically)."""
        from hookrun.common.files import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path, config: DataConfig) -> Preprocessor:
        """Read a state written by :meth:`save`.

        A file from hookrun before the preprocessor (``{"standardize": {feature_names, mean, std}}``)
        becomes numeric columns with those statistics and the config's policies.

        Args:
            path: the file.
            config: the ``data:`` section (for an old file's policies and label).

        Raises:
            SetupError: the file cannot be read, is not a regular file (a FIFO there would block the
                read forever), is not valid JSON or not a preprocessing state (exit 2).
        """
        from hookrun.common.files import read_regular_bytes

        try:
            text = read_regular_bytes(path).decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise SetupError(
                f"{path}: cannot read the saved preprocessing ({reason}); it must be the regular file hookrun "
                "wrote: restore it, or use a new run directory"
            ) from None
        try:
            data = loads_json(text)
            if isinstance(data.get("standardize"), dict):  # the Standardizer's layout
                old = data["standardize"]
                columns = [
                    ColumnState(name, NUMERIC, _policy_json(config.policy_for(name)), mean=mean, std=std)
                    for name, mean, std in zip(old["feature_names"], old["mean"], old["std"], strict=True)
                ]
                label_policy = "drop" if policy_name(config.policy_for(config.label)) == "drop" else "error"
                return cls(columns, LabelState(config.label, NUMERIC, label_policy), True, {})
            if data.get("format", FORMAT) != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, this hookrun reads format {FORMAT}")
            if not isinstance(data["columns"], list) or not (data["columns"] or config.tensor_features):
                raise ValueError("`columns` must be a non-empty list")  # empty: tensor features alone
            state = cls(
                columns=[ColumnState(**c) for c in data["columns"]],
                label=LabelState(**data["label"]),
                standardize=bool(data["standardize"]),
                split=dict(data.get("split") or {}),
            )
            _check_state(state)
            return state
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise SetupError(f"{path}: not a hookrun preprocessing state ({err}); use a new run directory") from None


def _is_number(value: Any, finite: bool = False) -> bool:
    """A JSON number (not a bool); with ``finite``, not NaN or infinite.

    A column's statistics may be non-finite in a state hookrun wrote (training rows with ``inf``, warned
    about in fit), so only their type is checked.
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return math.isfinite(value) or not finite


def _check_state(state: Preprocessor) -> None:
    """Check the types and values of a loaded state, field by field (a hand-edited file fails here).

    Raises:
        ValueError: naming the first wrong field, e.g. ``columns[0].std must be a positive number, not 'x'``.
    """
    seen: set[str] = set()
    for i, column in enumerate(state.columns):
        where = f"columns[{i}]"
        if not isinstance(column.name, str) or not column.name or column.name in seen:
            raise ValueError(f"{where}.name must be a column name, once, not {column.name!r}")
        seen.add(column.name)
        if column.kind not in (NUMERIC, CATEGORICAL):
            raise ValueError(f"{where}.kind must be {NUMERIC!r} or {CATEGORICAL!r}, not {column.kind!r}")
        if column.kind == NUMERIC:
            if column.fill is not None and not _is_number(column.fill):
                raise ValueError(f"{where}.fill must be a number or null, not {column.fill!r}")
            if state.standardize or column.mean is not None or column.std is not None:
                if not _is_number(column.mean):
                    raise ValueError(f"{where}.mean must be a number, not {column.mean!r}")
                if not _is_number(column.std) or column.std <= 0:
                    raise ValueError(f"{where}.std must be a positive number, not {column.std!r}")
        else:
            vocabulary = column.vocabulary
            if not isinstance(vocabulary, list) or not all(isinstance(v, str) for v in vocabulary):
                raise ValueError(f"{where}.vocabulary must be a list of strings, not {vocabulary!r}")
            if column.fill is not None and not isinstance(column.fill, str):
                raise ValueError(f"{where}.fill must be a string or null, not {column.fill!r}")
    label = state.label
    if not isinstance(label.name, str) or not label.name:
        raise ValueError(f"label.name must be a column name, not {label.name!r}")
    if label.kind not in (NUMERIC, CATEGORICAL):
        raise ValueError(f"label.kind must be {NUMERIC!r} or {CATEGORICAL!r}, not {label.kind!r}")
    if label.vocabulary is not None and (
        not isinstance(label.vocabulary, list) or not all(isinstance(v, str) for v in label.vocabulary)
    ):
        raise ValueError(f"label.vocabulary must be a list of strings or null, not {label.vocabulary!r}")
    if label.scale is not None and (not _is_number(label.scale, finite=True) or label.scale == 0):
        raise ValueError(f"label.scale must be a non-zero number or null, not {label.scale!r}")


#: Values a streaming median keeps per column (values, 8 bytes each); up to this many present values
#: the median is exact, beyond it is the median of a uniform random sample of this size (seeded).
MEDIAN_SAMPLE = 1_000_000


@dataclass
class _ColumnStats:
    """Running statistics of one column over the kept training rows."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    missing: int = 0
    sample: np.ndarray | None = None
    keys: np.ndarray | None = None
    vocabulary: set[str] = field(default_factory=set)


class Statistics:
    """The preprocessing statistics of the training rows, fed chunk by chunk in bounded memory.

    Per numeric column: count, mean and sum of squared deviations of the present values (merged
    across chunks as in Chan, Golub and LeVeque's parallel variance), the missing count, and for a
    ``median`` policy a sample of at most :data:`MEDIAN_SAMPLE` values (exact below that). Per
    categorical column (and a text label): the set of values, refused beyond ``data.max_categories``.
    The standard deviation after filling follows from these in closed form, so one pass suffices.
    Memory: ``O(columns x (MEDIAN_SAMPLE + max_categories))``, independent of the rows.

    Args:
        kinds: column -> kind (features, then the label).
        config: the ``data:`` section.
        split: the split description to save with the state.
        max_categories: overrides ``data.max_categories``.
    """

    def __init__(
        self,
        kinds: dict[str, str],
        config: DataConfig,
        split: dict[str, Any] | None = None,
        max_categories: int | None = None,
    ) -> None:
        names = [name for name in kinds if name != config.label]
        columns = [ColumnState(name, kinds[name], _policy_json(config.policy_for(name))) for name in names]
        label_policy = policy_name(config.policy_for(config.label))
        label = LabelState(config.label, kinds[config.label], "drop" if label_policy == "drop" else "error")
        self.state = Preprocessor(columns, label, config.standardize, dict(split or {}))
        self.config = config
        self.max_categories = max_categories if max_categories is not None else config.max_categories
        self.stats = {name: _ColumnStats() for name in kinds}
        self.rows = 0
        self.dropped = 0
        self.source: Path | None = None
        self.first_text: dict[str, tuple[int, str]] = {}
        self._rng = np.random.default_rng(config.seed or 0)
        self._warned: set[str] = set()  # numeric columns already warned about for infinite values

    def update(self, raw: RawColumns) -> None:
        """Add a chunk of training rows (parsed with the state's kinds).

        Raises:
            DataError: an empty cell under ``error`` (names file, line, column; see
                :meth:`Preprocessor.rows_to_keep`); a categorical column (or text label) with more
                than ``max_categories`` distinct values (names the cell that went over, at
                ``data.max_categories``).
        """
        if self.source is None:
            self.source = raw.source
            self.first_text = dict(raw.first_text)
        keep = self.state.rows_to_keep(raw)
        rows = raw if keep.all() else raw.take(keep)
        self.dropped += int((~keep).sum())
        self.rows += rows.num_rows
        for name, stats in self.stats.items():
            values = rows.values[name]
            missing = rows.missing(name)
            stats.missing += int(missing.sum())
            if self.state.kinds[name] == NUMERIC:
                if name not in self._warned and np.isinf(values).any():
                    self._warned.add(name)
                    warn_infinite(rows, name)
                if name == self.state.label.name:
                    continue
                present = values[~missing]
                self._merge(stats, present)
                if policy_name(self.config.policy_for(name)) == "median":
                    self._sample(stats, present)
            else:
                self._categories(stats, name, rows, values, missing)

    @staticmethod
    def _merge(stats: _ColumnStats, present: np.ndarray) -> None:
        if present.size == 0:
            return
        n_b = int(present.size)
        with np.errstate(invalid="ignore", over="ignore"):  # infinite cells: warned about in update
            mean_b = float(present.mean())
            m2_b = float(((present - mean_b) ** 2).sum())
        if stats.count == 0:
            stats.count, stats.mean, stats.m2 = n_b, mean_b, m2_b
            return
        n = stats.count + n_b
        delta = mean_b - stats.mean
        stats.mean = stats.mean + delta * n_b / n
        stats.m2 = stats.m2 + m2_b + delta * delta * stats.count * n_b / n
        stats.count = n

    def _sample(self, stats: _ColumnStats, present: np.ndarray) -> None:
        keys = self._rng.random(present.size)
        values = present if stats.sample is None else np.concatenate([stats.sample, present])
        keys = keys if stats.keys is None else np.concatenate([stats.keys, keys])
        if values.size > MEDIAN_SAMPLE:
            kept = np.argpartition(keys, MEDIAN_SAMPLE)[:MEDIAN_SAMPLE]
            values, keys = values[kept], keys[kept]
        stats.sample, stats.keys = values, keys

    def _categories(
        self, stats: _ColumnStats, name: str, rows: RawColumns, values: np.ndarray, missing: np.ndarray
    ) -> None:
        vocabulary = stats.vocabulary
        new = set(values[~missing].tolist()) - vocabulary
        if len(vocabulary) + len(new) <= self.max_categories:
            vocabulary |= new
            return
        for row, value in enumerate(values.tolist()):
            if value is None or value in vocabulary:
                continue
            vocabulary.add(value)
            if len(vocabulary) > self.max_categories:
                what = "the label" if name == self.state.label.name else "categorical column"
                raise DataError(
                    f"{rows.where(row, name)} has {value!r}, distinct value number {len(vocabulary):,} of {what} "
                    f"{name!r}; more than `data.max_categories` ({self.max_categories:,}) categories are refused "
                    "(each would be a feature): fix the cell if the column holds numbers, drop the column from "
                    "`data.features`, or raise `data.max_categories`",
                    loc=("data", "max_categories"),
                )

    def finish(self) -> Preprocessor:
        """The fitted state: fill values, means and standard deviations, vocabularies, the label's classes or scale.

        Raises:
            DataError: no row left, a column with no value to compute its fill from, a text constant for
                a numeric column, ``label_scale`` with a text label.
        """
        state, config = self.state, self.config
        source = self.source or Path(str(config.train))
        if self.rows == 0:
            raise DataError(f"{source}: every row has a missing value; nothing is left to train on")
        for column in state.columns:
            stats = self.stats[column.name]
            column.missing_rows = stats.missing
            policy = config.policy_for(column.name)
            kind = policy_name(policy)
            if column.kind == NUMERIC:
                if kind in ("mean", "median"):
                    if stats.count == 0:
                        raise DataError(
                            f"{source}: column {column.name!r} has no value in the training rows to compute "
                            f"its {kind} from; use `{{constant: V}}` or `drop`",
                            loc=_policy_loc(config, column.name),
                        )
                    column.fill = float(stats.mean if kind == "mean" else np.median(stats.sample))
                elif kind == "constant":
                    try:
                        column.fill = float(policy.constant)  # type: ignore[union-attr]
                    except ValueError:
                        raise DataError(
                            f"{source}: column {column.name!r} is numeric; its fill `constant: "
                            f"{policy.constant!r}` is not a number",  # type: ignore[union-attr]
                            loc=_policy_loc(config, column.name),
                        ) from None
                if state.standardize:
                    n_p = stats.count
                    m = stats.missing if column.fill is not None else 0
                    n = n_p + m
                    if m == 0:
                        mean, m2 = stats.mean, stats.m2
                    else:
                        fill = float(column.fill)  # type: ignore[arg-type]
                        mean = (n_p * stats.mean + m * fill) / n
                        m2 = stats.m2 + ((stats.mean - fill) ** 2) * n_p * m / n
                    std = math.sqrt(m2 / n) if n else 0.0
                    column.mean = float(mean)
                    column.std = std if std > 0 else 1.0
            else:
                if kind == "constant":
                    column.fill = _category_text(policy.constant)  # type: ignore[union-attr]
                present = set(stats.vocabulary)
                if column.fill is not None and stats.missing:
                    present.add(column.fill)
                column.vocabulary = sorted(present)
        label = state.label
        if label.kind == CATEGORICAL:
            if config.label_scale is not None:
                found = self.first_text.get(label.name)
                text = f"{found[1]!r} at line {found[0]}" if found else "declared categorical"
                raise DataError(
                    f"{source}: `label_scale` divides a numeric label, but {label.name!r} holds text "
                    f"({text}); remove `label_scale`",
                    loc=("data", "label_scale"),
                )
            label.vocabulary = sorted(self.stats[label.name].vocabulary)
        else:
            label.scale = config.label_scale
        return state


def same_split(saved: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether a saved split description is the current one.

    ``data.validation`` is recorded with absolute paths; a run directory written before that
    recorded it as in the config (relative to the config file). Such an entry matches when each
    current absolute path ends with the saved relative one (``..`` parts aside); the row counts
    must match as before.
    """
    if saved == current:
        return True
    before, after = dict(saved), dict(current)
    old, new = before.pop("validation", None), after.pop("validation", None)
    if before != after or old is None or new is None:
        return False
    olds = [old] if isinstance(old, str) else list(old)
    news = [new] if isinstance(new, str) else list(new)
    if len(olds) != len(news):
        return False
    for was, now in zip(olds, news, strict=True):
        if was == now:
            continue
        parts = [p for p in Path(os.path.normpath(was)).parts if p != ".."]
        if Path(was).is_absolute() or not parts or Path(now).parts[-len(parts):] != tuple(parts):
            return False
    return True


def warn_infinite(rows: RawColumns, name: str) -> None:
    """Warn once (a :class:`DataWarning`) if numeric column ``name`` holds infinite values (``inf``, ``1e999``).

    The column's mean and standard deviation, the values standardized with them and the loss are then
    not finite; numpy's own ``RuntimeWarning`` about it is silenced where hookrun computes them.
    """
    infinite = np.isinf(rows.values[name])
    if infinite.any():
        count = int(infinite.sum())
        row = int(np.flatnonzero(infinite)[0])
        warnings.warn(
            DataWarning(
                f"{rows.file_of(row)}:{int(rows.lines[row])}: column {name!r} holds {count} infinite value(s) in "
                "the training rows, the first on this line; its statistics and the loss will not be finite: "
                "replace or remove them"
            ),
            stacklevel=2,
        )


def policy_name_json(policy: str | dict[str, Any]) -> str:
    """The name of a policy in its JSON form: ``"median"`` -> ``median``, ``{"constant": V}`` -> ``constant``."""
    return policy if isinstance(policy, str) else "constant"


def _category_text(value: float | str) -> str:
    """A YAML constant as a category: ``1.0`` -> ``"1"`` when whole, else its text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _key_loc(raw: RawColumns) -> tuple[str, ...]:
    return tuple(raw.key.split("."))


def check_label_for_builder(graph: GraphConfig, state: Preprocessor, train: RawColumns) -> None:
    """Check the label suits a built-in builder: numbers for a regressor, classes for a classifier.

    Custom builders are not checked (their labels are passed as prepared).

    Args:
        graph: the ``graph:`` section (builder and checked params).
        state: the fitted preprocessor.
        train: the training rows (for a numeric label's class ids).

    Raises:
        DataError: a regressor with a text label (at ``data.label``); a classifier whose training
            split has more classes than ``n_classes`` (at ``graph.params.n_classes``), whose numeric
            label is not a whole number in ``0 .. n_classes-1`` (names file and line), or with
            ``label_scale`` (at ``data.label_scale``).
    """
    if graph.builder not in BUILDER_PARAMS:
        return
    label = state.label
    if graph.builder not in CLASSIFIERS:
        if label.kind == CATEGORICAL:
            found = train.first_text.get(label.name)
            where = f"{train.source}:{found[0]}: " if found else f"{train.source}: "
            value = f"has {found[1]!r}, not a number" if found else "is declared categorical"
            raise DataError(
                f"{where}label column {label.name!r} {value}; {graph.builder} predicts a number: use "
                "linear_classifier or dnn_classifier for classes",
                loc=("data", "label"),
            )
        return
    n_classes = int(graph.params["n_classes"])
    if label.scale is not None:
        raise DataError(
            f"`label_scale` divides a regression label; {graph.builder} predicts classes: remove it",
            loc=("data", "label_scale"),
        )
    if label.kind == CATEGORICAL:
        vocabulary = label.vocabulary or []
        if len(vocabulary) > n_classes:
            raise DataError(
                f"the label {label.name!r} has {len(vocabulary)} classes in the training rows "
                f"({', '.join(vocabulary)}) but n_classes is {n_classes}; set `n_classes: {len(vocabulary)}`",
                loc=("graph", "params", "n_classes"),
            )
        return
    values = train.values[label.name]
    bad = np.flatnonzero(~np.isnan(values) & ((values != np.round(values)) | (values < 0) | (values >= n_classes)))
    if bad.size:
        raise DataError(
            f"{train.where(int(bad[0]), label.name)} has {values[bad[0]]:g}, not a class id 0..{n_classes - 1}; "
            f"{graph.builder} needs whole numbers below n_classes ({n_classes}), or text classes",
            loc=("data", "label"),
        )
