"""Checks before TensorFlow is imported, shared by ``validate`` and the start of ``train``.

Fast (no TensorFlow): the data file's header and first rows, and the hook
list's structure. Returns issues; errors stop the run (exit 2), warnings
are printed and the run goes on.
"""

from __future__ import annotations

from hookrun.config_schemas.builders import builtin_eval_metrics
from hookrun.config_schemas.errors import SetupError
from hookrun.config_schemas.graph import BUILTIN_BUILDERS
from hookrun.config_schemas.hook_base import LIFECYCLE_METHODS
from hookrun.config_schemas.imports import find_module
from hookrun.config_schemas.interpolation import placeholder_problems
from hookrun.config_schemas.loader import ConfigIssue, LoadedConfig
from hookrun.hooks.evaluation import NO_VALIDATION_DATA
from hookrun.runner.data.preprocessing import Preprocessor, check_label_for_builder
from hookrun.runner.data.reader import KIND_SAMPLE_ROWS, load_raw_data
from hookrun.runner.data.sources import SAMPLE_CHARS

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
        ``graph.params.n_classes``, ...). Else nothing.
    """
    config = loaded.config
    try:
        raw = load_raw_data(config.data, loaded.base_dir, max_rows=PREVIEW_ROWS, split=False, budget=SAMPLE_CHARS)
        state = Preprocessor.fit(raw.train, config.data, raw.split)
        state.transform(raw.train)
        check_label_for_builder(config.graph, state, raw.train)
        if raw.validation is not None:
            state.transform(raw.validation, strict_labels=False)
    except SetupError as err:
        return [loaded.issue(getattr(err, "loc", ("data", "train")), str(err))]
    return []


def check_hooks(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Structural checks of the hook list.

    - error: two ``checkpoint_saver`` hooks writing the same directory;
    - warning: ``nan_tensor`` after a ``checkpoint_saver`` (a NaN step could
      be checkpointed before it is caught);
    - warning: no ``stop_at_step`` while the data repeats forever
      (``epochs: null``): the run never ends by itself;
    - error: an ``evaluation`` hook without validation data, or a second one;
    - error: an ``early_stopping`` hook with no ``evaluation`` hook before it,
      or (built-in builders) a ``monitor`` the evaluation does not give;
    - error: a ``custom`` hook's ``args`` with an unknown ``${...}`` placeholder (see
      :mod:`hookrun.config_schemas.interpolation`), at the string's own place.
    """
    issues: list[ConfigIssue] = []
    hooks = loaded.config.hooks
    data = loaded.config.data
    checkpoint_dirs: dict[str, int] = {}
    first_saver: int | None = None
    first_evaluation: int | None = None
    for index, hook in enumerate(hooks):
        kind = hook.type  # type: ignore[attr-defined]
        if kind == "evaluation":
            if data.validation is None and data.validation_split is None:
                issues.append(loaded.issue(("hooks", index), NO_VALIDATION_DATA))
            elif first_evaluation is not None:
                issues.append(
                    loaded.issue(
                        ("hooks", index),
                        f"a second evaluation hook (the first is hooks[{first_evaluation}]); keep one",
                    )
                )
            first_evaluation = index if first_evaluation is None else first_evaluation
        if kind == "early_stopping":
            issues.extend(_check_early_stopping(loaded, index, first_evaluation))
        if kind == "custom":
            for where, message in placeholder_problems(hook.args, ("hooks", index, "args")):  # type: ignore[attr-defined]
                issues.append(loaded.issue(where, message))
        if kind == "checkpoint_saver":
            directory = hook.checkpoint_dir or "."  # type: ignore[attr-defined]
            if directory in checkpoint_dirs:
                issues.append(
                    loaded.issue(
                        ("hooks", index),
                        f"a second checkpoint_saver writes the same directory as hooks[{checkpoint_dirs[directory]}]"
                        "; remove one or give it another `checkpoint_dir`",
                    )
                )
            checkpoint_dirs.setdefault(directory, index)
            if first_saver is None:
                first_saver = index
        if kind == "nan_tensor" and first_saver is not None:
            issues.append(
                loaded.issue(
                    ("hooks", index),
                    f"nan_tensor comes after checkpoint_saver (hooks[{first_saver}]): a NaN step could be "
                    "checkpointed before it is caught; move nan_tensor up",
                    severity="warning",
                )
            )
    if loaded.config.data.epochs is None and not any(h.type == "stop_at_step" for h in hooks):  # type: ignore[attr-defined]
        issues.append(
            loaded.issue(
                ("data", "epochs"),
                "the data repeats forever (epochs: null) and no stop_at_step hook is set: the run never ends; "
                "add `- type: stop_at_step` with `last_step` or `num_steps`",
                severity="warning",
            )
        )
    return issues


def _check_early_stopping(loaded: LoadedConfig, index: int, first_evaluation: int | None) -> list[ConfigIssue]:
    """An ``early_stopping`` hook needs an ``evaluation`` hook before it, and a monitor it gives."""
    if first_evaluation is None:
        return [
            loaded.issue(
                ("hooks", index),
                "early_stopping reads the results of an `evaluation` hook: add `- type: evaluation` (with "
                "`every_n_steps`) before it in `hooks:`",
            )
        ]
    graph = loaded.config.graph
    metrics = builtin_eval_metrics(graph.builder, graph.params)
    if metrics is None:
        return []
    problem = loaded.config.hooks[index].unknown_monitor(  # type: ignore[attr-defined]
        ["val_loss", *(f"val_{m}" for m in metrics)], evaluated_for=graph.builder
    )
    return [] if problem is None else [loaded.issue(("hooks", index, "monitor"), problem)]


def check_imports(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Every ``module:name`` of the config names a module that can be found; nothing is executed.

    Checks ``graph.builder`` (unless built-in) and each ``custom`` hook's ``class`` and lifecycle
    functions with :func:`hookrun.config_schemas.imports.find_module` (the config's directory first,
    then ``sys.path``; the module is located, not run, so this stays fast and TensorFlow-free). The
    name after ``:`` is checked when the graph is built (``validate --build``, ``train``).

    Returns:
        One error per module that cannot be found, at its key (``graph.builder``, ``hooks[2].class``).
    """
    places: list[tuple[tuple[str | int, ...], str]] = []
    builder = loaded.config.graph.builder
    if builder not in BUILTIN_BUILDERS and ":" in builder:
        places.append((("graph", "builder"), builder))
    for index, hook in enumerate(loaded.config.hooks):
        if hook.type != "custom":  # type: ignore[attr-defined]
            continue
        for key in ("class_", *LIFECYCLE_METHODS):
            value = getattr(hook, key)
            if value is not None:
                places.append((("hooks", index, key.rstrip("_")), value))
    issues: list[ConfigIssue] = []
    for loc, value in places:
        reason = find_module(value.partition(":")[0], loaded.base_dir)
        if reason is not None:
            issues.append(loaded.issue(loc, f"{value!r}: {reason}"))
    return issues


def preflight(loaded: LoadedConfig) -> list[ConfigIssue]:
    """All checks before TensorFlow: :func:`check_data`, :func:`check_imports`, :func:`check_hooks`, in file order."""
    issues = check_data(loaded) + check_imports(loaded) + check_hooks(loaded)
    return sorted(issues, key=lambda i: (i.line or 0, i.column or 0))
