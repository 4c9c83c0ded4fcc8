"""Checks before TensorFlow is imported, shared by ``validate`` and the start of ``train``.

Fast (no TensorFlow): the data file's header and first rows, and the hook
list's structure. Returns issues; errors stop the run (exit 2), warnings
are printed and the run goes on.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from hookrun.common.errors import SetupError
from hookrun.config_schemas.bounds import BYTES_PER_WEIGHT, INT32_MAX
from hookrun.config_schemas.builders import CLASSIFIERS
from hookrun.config_schemas.graph import BUILTIN_BUILDERS, GraphConfig
from hookrun.config_schemas.hook_base import HookList
from hookrun.config_schemas.imports import ImportFailure, check_import_safe, find_module
from hookrun.config_schemas.loader import ConfigIssue, LoadedConfig
from hookrun.config_schemas.run_files import hook_path_issues
from hookrun.runner.data.formats.base import SAMPLE_CHARS
from hookrun.runner.data.preprocessing import Preprocessor, check_label_for_builder
from hookrun.runner.data.reader import (
    KIND_SAMPLE_ROWS,
    DataError,
    RawData,
    check_split,
    chunk_validation_mask,
    load_raw_data,
    resolve_sets,
)

#: Data rows read by the quick check (rows): the rows that fix each column's kind; ``train`` reads every file.
PREVIEW_ROWS = KIND_SAMPLE_ROWS


def check_data(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Read the CSVs' headers and first rows and check they fit ``data:`` and the builder.

    The first :data:`PREVIEW_ROWS` rows of the training file (and of the
    ``validation`` file) are parsed and preprocessed as training would, without
    the validation split: missing-value policies, column kinds, fill values, the
    label for a built-in regressor or classifier (its classes so far against
    ``n_classes``).

    Returns:
        One error issue when a file is missing, empty, header-only, ragged,
        lacks the label or a feature, has an empty cell under ``missing:
        error``, a text cell in a column that is numeric in the training
        file (validation file), a text label for a regressor, more classes
        than ``n_classes``, ...; located at the config key to change
        (``data.train``, ``data.validation``, ``data.missing_by_column.X``,
        ``graph.params.n_classes``, ...), or, when those rows are all the training data, a
        ``validation_split`` that leaves no training or no validation row (as ``train`` would refuse it).
        Else nothing.
    """
    config = loaded.config
    if config.data.input_fn is not None:  # the user's pipeline: read when the graph is built
        return []
    try:
        raw = load_raw_data(config.data, loaded.base_dir, max_rows=PREVIEW_ROWS, split=False, budget=SAMPLE_CHARS)
        state = Preprocessor.fit(raw.train, config.data, raw.split)
        state.transform(raw.train)
        check_label_for_builder(config.graph, state, raw.train)
        check_model_size(config.graph, len(state.feature_names))
        check_label_scale(config.data.label_scale, config.data.label, raw)
        if raw.validation is not None:
            state.transform(raw.validation, strict_labels=False)
        check_small_split(loaded, raw)
    except SetupError as err:
        return [loaded.issue(getattr(err, "loc", ("data", "train")), str(err))]
    return []


def memory_bytes() -> int | None:
    """The memory this process may use (bytes): the machine's, or its cgroup's limit if lower; None if unknown.

    The cgroup limit (``/sys/fs/cgroup/memory.max``, v1's ``memory.limit_in_bytes``) is what a container
    gets; beyond it the kernel kills the process as it would beyond the machine's memory.
    """
    import os

    try:
        found = int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        found = None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file, encoding="ascii") as handle:
                text = handle.read(64).strip()
        except OSError:
            continue
        if text.isdigit() and (found is None or int(text) < found):
            found = int(text)
    return found


def check_model_size(graph: GraphConfig, num_features: int, memory: int | None = None) -> None:
    """Refuse a built-in builder whose weights TensorFlow cannot hold, before it tries to allocate them.

    The layers are ``num_features -> hidden_units... -> outputs`` (1, or ``n_classes`` for a
    classifier). Each weight matrix must have at most :data:`~hookrun.config_schemas.bounds.INT32_MAX`
    elements, and every weight, with its gradient and optimizer slots
    (:data:`~hookrun.config_schemas.bounds.BYTES_PER_WEIGHT` bytes each), must fit ``memory``.
    Custom builders are not checked.

    Args:
        graph: the ``graph:`` section (checked params, defaults filled in).
        num_features: the model's input width after encoding (one-hot columns counted) (count).
        memory: bytes available (default: :func:`memory_bytes`, the machine's or its cgroup's limit).

    Raises:
        DataError: at ``graph.params.hidden_units`` (or ``n_classes`` for a linear classifier) (exit 2).
    """
    if graph.builder not in BUILTIN_BUILDERS:
        return
    hidden = [int(units) for units in graph.params.get("hidden_units", [])]
    outputs = int(graph.params["n_classes"]) if graph.builder in CLASSIFIERS else 1
    widths = [max(1, num_features), *hidden, outputs]
    where = ("graph", "params", "hidden_units" if hidden else "n_classes")
    for index, (fan_in, units) in enumerate(zip(widths, widths[1:], strict=False)):
        if fan_in * units > INT32_MAX:
            layer = f"layer {index} ({fan_in:,} x {units:,})" if index < len(hidden) else (
                f"the output layer ({fan_in:,} x {units:,})")
            raise DataError(
                f"{layer} has {fan_in * units:,} weights, more than a TensorFlow tensor holds "
                f"({INT32_MAX:,}); use narrower layers",
                loc=where,
            )
    weights = sum(a * b + b for a, b in zip(widths, widths[1:], strict=False))
    memory = memory_bytes() if memory is None else memory
    if memory is not None and weights * BYTES_PER_WEIGHT > memory:
        raise DataError(
            f"{weights:,} weights ({num_features:,} features in) need about "
            f"{weights * BYTES_PER_WEIGHT / 2**30:,.1f} GiB with their gradients and optimizer slots, more than "
            f"the {memory / 2**30:,.1f} GiB of memory this process may use (the machine's, or its cgroup's limit); use "
            "narrower layers",
            loc=where,
        )


#: Largest training-units label whose square (the squared error) is a finite float32: sqrt(3.4e38).
MAX_TRAINING_LABEL = 1.8e19


def check_label_scale(scale: float | None, label: str, raw: RawData) -> None:
    """Refuse a ``data.label_scale`` that makes the read labels too large for float32 once divided by it.

    The loss squares ``label / label_scale`` in float32: a label of 10 with ``label_scale: 1e-18`` is
    1e19, its square past float32's 3.4e38, so the first loss is ``inf`` and training diverges. Checked
    on the rows the quick read holds (``validate`` and ``train`` alike); a larger label further in the
    data ends the run with a NaN loss.

    Args:
        scale: ``data.label_scale``, or None.
        label: ``data.label``.
        raw: the rows read (a numeric label is ``float64``, NaN where missing).

    Raises:
        DataError: at ``data.label_scale``, naming the largest label read (exit 2).
    """
    if scale is None:
        return
    for rows in (raw.train, raw.validation):
        if rows is None:
            continue
        values = rows.values.get(label)
        if values is None or values.dtype.kind != "f" or not values.size:
            continue
        largest = float(np.nanmax(np.abs(values))) if not np.isnan(values).all() else 0.0
        if largest / scale > MAX_TRAINING_LABEL:
            raise DataError(
                f"label_scale {scale:g}: a label of {largest:g} becomes {largest / scale:.3g} in training, whose "
                f"square overflows float32 (largest {MAX_TRAINING_LABEL:.2g}); use a larger label_scale",
                loc=("data", "label_scale"),
            )


def check_small_split(loaded: LoadedConfig, raw: RawData) -> None:
    """Split the preview's rows by ``data.validation_split`` when they are all the training data.

    So ``validate`` refuses what ``train`` would (``validation_split: 0.999999999`` of 64 rows leaves
    no training row): the preview is the whole data when it is one uncompressed file of at most
    :data:`~hookrun.runner.data.sources.SAMPLE_CHARS` bytes holding fewer than :data:`PREVIEW_ROWS`
    rows. Larger data is split only by ``train`` (reading it all here would make ``validate`` as slow).

    Args:
        loaded: the config.
        raw: the preview read without the split (``load_raw_data(..., split=False)``).

    Raises:
        DataError: the split leaves no training or no validation row (at ``data.validation_split``).
    """
    data = loaded.config.data
    if data.validation_split is None or data.seed is None or raw.train.num_rows >= PREVIEW_ROWS:
        return
    train_set, _ = resolve_sets(data, loaded.base_dir)
    if len(train_set.files) != 1 or train_set.files[0].gzip:
        return
    try:
        if train_set.files[0].path.stat().st_size > SAMPLE_CHARS:
            return
    except OSError:
        return
    held = chunk_validation_mask(raw.train, train_set, data.validation_split, data.seed)
    check_split(data.validation_split, int((~held).sum()), int(held.sum()))


def check_hooks(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Structural checks of the hook list, asked of each hook (``HookConfig.list_issues``).

    Each hook type knows its own rules (e.g. ``evaluation`` needs validation data, ``early_stopping`` an
    ``evaluation`` before it, two ``checkpoint_saver`` hooks must not share a directory). The rules of
    the run itself: the run directory's paths (:func:`hookrun.config_schemas.run_files.hook_path_issues`:
    no hook writes outside it, over another hook's path or over one of the run's own), and a warning
    when the data repeats forever (``epochs: null``) and no hook ends the run at a step
    (``HookConfig.ends_at_step``).
    """
    config = loaded.config
    data = config.data
    run = HookList(
        hooks=config.hooks,
        has_validation_data=data.validation is not None or data.validation_split is not None
        or data.eval_input_fn is not None,
        builder=config.graph.builder,
        builder_params=dict(config.graph.params),
        steps_per_run=config.session.steps_per_run,
    )
    issues = [
        loaded.issue(where, message, severity=severity)
        for index, hook in enumerate(config.hooks)
        for where, message, severity in hook.list_issues(index, run)
    ]
    issues += [loaded.issue(where, message) for where, message in hook_path_issues(config.hooks)]
    if data.epochs is None and not any(h.ends_at_step(0) is not None for h in config.hooks):
        issues.append(
            loaded.issue(
                ("data", "epochs"),
                "the data repeats forever (epochs: null) and no stop_at_step hook is set: the run never ends; "
                "add `- type: stop_at_step` with `last_step` or `num_steps`",
                severity="warning",
            )
        )
    return issues


def check_imports(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Every ``module:name`` of the config names a module that can be found; nothing is executed.

    Checks ``graph.builder`` (unless built-in), ``data.input_fn``, ``data.eval_input_fn``,
    ``graph.serving_input_fn``, and each
    ``custom`` hook's ``class`` and lifecycle functions with :func:`hookrun.config_schemas.imports.find_module`
    (the config's directory first, then ``sys.path``; the module is located, not run, so this stays fast and
    TensorFlow-free). The name after ``:`` is checked when the graph is built (``validate --build``, ``train``).

    A module found is also read (not run) for a program's entry point at module level
    (:func:`hookrun.config_schemas.imports.check_import_safe`: ``app.run(main)`` outside
    ``if __name__ == "__main__":``), which importing it for training would start.

    Returns:
        One error per module that cannot be found or would start a program when imported, at its key
        (``graph.builder``, ``hooks[2].class``).
    """
    places: list[tuple[tuple[str | int, ...], str]] = []
    builder = loaded.config.graph.builder
    if builder not in BUILTIN_BUILDERS and ":" in builder:
        places.append((("graph", "builder"), builder))
    for key in ("input_fn", "eval_input_fn"):
        if (value := getattr(loaded.config.data, key)) is not None:
            places.append((("data", key), value))
    if (serving := loaded.config.graph.serving_input_fn) is not None:
        places.append((("graph", "serving_input_fn"), serving))
    for index, hook in enumerate(loaded.config.hooks):
        places.extend((("hooks", index, key), value) for key, value in hook.import_paths())
    issues: list[ConfigIssue] = []
    for loc, value in places:
        reason = find_module(value.partition(":")[0], loaded.base_dir)
        if reason is not None:
            issues.append(loaded.issue(loc, f"{value!r}: {reason}"))
            continue
        try:  # found: read (not run) it for a program that would start when imported
            check_import_safe(value.partition(":")[0], loaded.base_dir, ".".join(str(part) for part in loc))
        except ImportFailure as err:
            issues.append(loaded.issue(loc, f"{value!r}: {err.reason}"))
    return issues


def check_warm_start(loaded: LoadedConfig, run_dir: Path | None = None) -> list[ConfigIssue]:
    """``graph.warm_start.from`` names a run directory, a directory of checkpoints or a checkpoint prefix.

    Only the files' presence is checked here (no TensorFlow): a directory holding a checkpoint
    (``*.index``) or ``<prefix>.index``. Skipped when the run directory already holds a checkpoint
    of its own: that run resumes from it and ignores ``warm_start`` (so a resume still works after
    the warm-start source is gone). Whether the checkpoint reads back and fits the graph is checked
    when the graph is built (:func:`hookrun.runner.graph.warm_start.warm_start`).

    Args:
        loaded: the config.
        run_dir: the run directory as ``--run-dir`` gives it, or None for the config's own
            (``session.run_dir`` or ``runs/<name>``).

    Returns:
        One error at ``graph.warm_start.from`` when nothing usable is there, else nothing.
    """
    from hookrun.runner.graph.warm_start import resolve_source_path

    settings = loaded.config.graph.warm_start
    if settings is None:
        return []
    if run_dir is None:
        session_dir = loaded.config.session.run_dir
        run_dir = loaded.base_dir / session_dir if session_dir is not None else Path("runs") / loaded.config.name
    try:
        if run_dir.is_dir() and any(run_dir.glob("*.index")):
            return []  # a resume: its own checkpoint is restored, warm_start is not used
    except OSError:
        pass  # an unusable run directory is reported when training starts
    reason = resolve_source_path(settings.from_, loaded.base_dir)[1]
    return [] if reason is None else [loaded.issue(("graph", "warm_start", "from"), reason)]


def check_run_dir_path(loaded: LoadedConfig, run_dir: Path | None = None) -> list[ConfigIssue]:
    """The run directory's path is one TensorFlow can use (:func:`hookrun.runner.run_dir.directory.check_usable_path`).

    Glob characters, bytes that are not UTF-8 and a path too long for the files written in it are refused by
    ``validate`` as by ``train``; ``--run-dir`` is named as given, ``session.run_dir`` at its key.

    Returns:
        One error at ``session.run_dir`` (or ``name``, for the default ``runs/<name>``), else nothing.
    """
    from hookrun.runner.run_dir.directory import check_usable_path

    session_dir = loaded.config.session.run_dir
    what = "--run-dir" if run_dir is not None else "run directory"
    if run_dir is None:
        run_dir = loaded.base_dir / session_dir if session_dir is not None else Path("runs") / loaded.config.name
    try:
        check_usable_path(Path(os.path.abspath(run_dir)), what)
    except SetupError as err:
        return [loaded.issue(("session", "run_dir") if session_dir is not None else ("name",), str(err))]
    return []


def check_steps_per_run(loaded: LoadedConfig) -> list[ConfigIssue]:
    """``session.steps_per_run`` > 1 is refused with ``cluster:`` (an error, exit 2).

    A cluster runs one step per session call (between-graph replication: every worker's step is one
    ``Session.run``), so the fused loop is refused there (``TF_CONFIG`` alone is refused when ``train``
    starts). (The hooks warn of their own: a custom hook, through ``HookConfig.list_issues``.)
    """
    config = loaded.config
    steps_per_run = config.session.steps_per_run
    if steps_per_run <= 1:
        return []
    issues = []
    if config.cluster is not None:
        issues.append(
            loaded.issue(
                ("session", "steps_per_run"),
                f"steps_per_run: {steps_per_run} does not run on a cluster (between-graph replication runs one "
                "step per session call); set session.steps_per_run: 1 or remove `cluster:`",
            )
        )
    return issues


def preflight(loaded: LoadedConfig, run_dir: Path | None = None) -> list[ConfigIssue]:
    """All checks before TensorFlow, in file order.

    :func:`check_data`, :func:`check_imports`, :func:`check_hooks`, :func:`check_warm_start`,
    :func:`check_run_dir_path`, :func:`check_steps_per_run`.

    Args:
        loaded: the config.
        run_dir: ``--run-dir`` when given (where a resume would find its checkpoint).
    """
    issues = (
        check_data(loaded)
        + check_imports(loaded)
        + check_hooks(loaded)
        + check_warm_start(loaded, run_dir)
        + check_run_dir_path(loaded, run_dir)
        + check_steps_per_run(loaded)
    )
    return sorted(issues, key=lambda i: (i.line or 0, i.column or 0))
