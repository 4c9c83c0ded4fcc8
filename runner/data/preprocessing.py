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
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.config_schemas.builders import BUILDER_PARAMS, CLASSIFIERS
from hookrun.config_schemas.data import DataConfig, MissingPolicy, policy_name
from hookrun.config_schemas.errors import DataWarning
from hookrun.config_schemas.graph import GraphConfig
from hookrun.runner.data.reader import CATEGORICAL, NUMERIC, RawColumns, TrainingData
from hookrun.runner.errors import DataError, SetupError

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
    """

    name: str
    kind: str
    missing: str | dict[str, Any]
    fill: float | str | None = None
    mean: float | None = None
    std: float | None = None
    vocabulary: list[str] | None = None

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
        split: how training and validation rows were split (see :class:`hookrun.runner.data.reader.RawData`).
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
    def fit(cls, raw: RawColumns, config: DataConfig, split: dict[str, Any] | None = None) -> Preprocessor:
        """Learn the state from the training rows only.

        Steps: drop rows with an empty cell in a ``drop`` column (or the label); check no ``error``
        column has an empty cell; compute fill values (``mean``/``median`` of the present cells,
        or the constant); then, on the filled rows, each numeric column's mean and standard
        deviation and each categorical column's sorted vocabulary; the label's vocabulary (text) or
        ``label_scale`` (numbers).

        Args:
            raw: the training split's columns.
            config: the ``data:`` section (policies, ``standardize``, ``label_scale``).
            split: the split description to save with the state.

        Returns:
            The fitted preprocessor.

        Raises:
            DataError: an empty cell under ``error`` (names file and line), a categorical column with an
                empty cell under ``mean``/``median``, no rows left, a column with no value to compute its
                fill from, a text constant for a numeric column, ``label_scale`` with a text label.
        """
        names = [name for name in raw.kinds if name != config.label]
        columns = [ColumnState(name, raw.kinds[name], _policy_json(config.policy_for(name))) for name in names]
        label_policy = policy_name(config.policy_for(config.label))
        label = LabelState(config.label, raw.kinds[config.label], "drop" if label_policy == "drop" else "error")
        state = cls(columns, label, config.standardize, dict(split or {}))
        train = raw.take(state.rows_to_keep(raw))
        if train.num_rows == 0:
            raise DataError(f"{raw.source}: every row has a missing value; nothing is left to train on")
        for column in columns:
            state._fit_column(column, train, config)
        if label.kind == NUMERIC:
            warn_infinite(train, label.name)
        if label.kind == CATEGORICAL:
            if config.label_scale is not None:
                raise DataError(
                    f"{raw.source}: `label_scale` divides a numeric label, but {label.name!r} holds text "
                    f"({_first_text(raw, label.name)}); remove `label_scale`",
                    loc=("data", "label_scale"),
                )
            label.vocabulary = sorted(set(train.values[label.name]))
        else:
            label.scale = config.label_scale
        return state

    def _fit_column(self, column: ColumnState, train: RawColumns, config: DataConfig) -> None:
        """Fill value, then mean/std or vocabulary of one column, from the (kept) training rows."""
        values = train.values[column.name]
        missing = train.missing(column.name)
        policy = config.policy_for(column.name)
        kind = policy_name(policy)
        if column.kind == NUMERIC:
            warn_infinite(train, column.name)
            present = values[~missing]
            if kind in ("mean", "median"):
                if present.size == 0:
                    raise DataError(
                        f"{train.source}: column {column.name!r} has no value in the training rows to compute "
                        f"its {kind} from; use `{{constant: V}}` or `drop`",
                        loc=_policy_loc(config, column.name),
                    )
                with np.errstate(invalid="ignore", over="ignore"):
                    column.fill = float(present.mean() if kind == "mean" else np.median(present))
            elif kind == "constant":
                try:
                    column.fill = float(policy.constant)  # type: ignore[union-attr]
                except ValueError:
                    raise DataError(
                        f"{train.source}: column {column.name!r} is numeric; its fill `constant: "
                        f"{policy.constant!r}` is not a number",  # type: ignore[union-attr]
                        loc=_policy_loc(config, column.name),
                    ) from None
            if self.standardize:
                filled = np.where(missing, column.fill if column.fill is not None else np.nan, values)
                with np.errstate(invalid="ignore", over="ignore"):  # infinite cells: warned about above
                    std = float(filled.std())
                    column.mean = float(filled.mean())
                column.std = std if std > 0 else 1.0
        else:
            if kind == "constant":
                column.fill = _category_text(policy.constant)  # type: ignore[union-attr]
            present = [value for value in values if value is not None]
            if column.fill is not None and missing.any():
                present.append(column.fill)
            column.vocabulary = sorted(set(present))

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
            split: the current split description (:attr:`hookrun.runner.data.reader.RawData.split`).
            path: the state file, for the message.

        Raises:
            SetupError: the config or the data changed since the state was saved.
        """
        diffs = self.differences(config)
        if self.split and split != self.split:
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
        from hookrun.hooks.files import atomic_write_text

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
            SetupError: the file is not valid JSON or not a preprocessing state.
        """
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data.get("standardize"), dict):  # the Standardizer's layout
                old = data["standardize"]
                columns = [
                    ColumnState(name, NUMERIC, _policy_json(config.policy_for(name)), mean=mean, std=std)
                    for name, mean, std in zip(old["feature_names"], old["mean"], old["std"], strict=True)
                ]
                label_policy = "drop" if policy_name(config.policy_for(config.label)) == "drop" else "error"
                return cls(columns, LabelState(config.label, NUMERIC, label_policy), True, {})
            return cls(
                columns=[ColumnState(**c) for c in data["columns"]],
                label=LabelState(**data["label"]),
                standardize=bool(data["standardize"]),
                split=dict(data.get("split") or {}),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise SetupError(f"{path}: not a hookrun preprocessing state ({err}); use a new run directory") from None


def warn_infinite(rows: RawColumns, name: str) -> None:
    """Warn once (a :class:`DataWarning`) if numeric column ``name`` holds infinite values (``inf``, ``1e999``).

    The column's mean and standard deviation, the values standardized with them and the loss are then
    not finite; numpy's own ``RuntimeWarning`` about it is silenced where hookrun computes them.
    """
    infinite = np.isinf(rows.values[name])
    if infinite.any():
        count = int(infinite.sum())
        first = int(rows.lines[infinite][0])
        warnings.warn(
            DataWarning(
                f"{rows.source}:{first}: column {name!r} holds {count} infinite value(s) in the training rows, the "
                "first on this line; its statistics and the loss will not be finite: replace or remove them"
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


def _first_text(raw: RawColumns, name: str) -> str:
    found = raw.first_text.get(name)
    return f"{found[1]!r} at line {found[0]}" if found else "declared categorical"


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
