"""Checks before TensorFlow is imported, shared by ``validate`` and the start of ``train``.

Fast (no TensorFlow): the data file's header and first rows, and the hook
list's structure. Returns issues; errors stop the run (exit 2), warnings
are printed and the run goes on.
"""

from __future__ import annotations

from hookrun.config_schemas.errors import SetupError
from hookrun.config_schemas.loader import ConfigIssue, LoadedConfig
from hookrun.runner.data import read_csv, table_to_arrays

#: Data rows read by the quick check (rows); ``train`` reads the whole file anyway.
PREVIEW_ROWS = 200


def check_data(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Read the CSV's header and first rows and check they fit ``data:``.

    Returns:
        One error issue (at ``data.train``) when the file is missing, empty,
        header-only, ragged, lacks the label or a feature, or a first-row
        cell is not a number; else nothing.
    """
    data = loaded.config.data
    try:
        table = read_csv(loaded.base_dir / data.train, max_rows=PREVIEW_ROWS)
        table_to_arrays(table, data)
    except SetupError as err:
        return [loaded.issue(("data", "train"), str(err))]
    return []


def check_hooks(loaded: LoadedConfig) -> list[ConfigIssue]:
    """Structural checks of the hook list.

    - error: two ``checkpoint_saver`` hooks writing the same directory;
    - warning: ``nan_tensor`` after a ``checkpoint_saver`` (a NaN step could
      be checkpointed before it is caught);
    - warning: no ``stop_at_step`` while the data repeats forever
      (``epochs: null``): the run never ends by itself.
    """
    issues: list[ConfigIssue] = []
    hooks = loaded.config.hooks
    checkpoint_dirs: dict[str, int] = {}
    first_saver: int | None = None
    for index, hook in enumerate(hooks):
        kind = hook.type  # type: ignore[attr-defined]
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


def preflight(loaded: LoadedConfig) -> list[ConfigIssue]:
    """All checks before TensorFlow: :func:`check_data` then :func:`check_hooks`, in file order."""
    issues = check_data(loaded) + check_hooks(loaded)
    return sorted(issues, key=lambda i: (i.line or 0, i.column or 0))
