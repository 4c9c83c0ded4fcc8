"""Options shared by several commands (one definition each)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def non_empty_path(value: str) -> Path:
    """A path option's value; an empty string (an unset shell variable) is refused (exit 2), not read as ``.``.

    Raises:
        typer.BadParameter: ``value`` is empty.
    """
    if isinstance(value, Path):
        return value
    if value == "":
        raise typer.BadParameter("an empty path (an unset variable?); give a path, or `.` for this directory")
    return Path(value)


ConfigArg = Annotated[
    Path,
    typer.Argument(help="The YAML config file.", show_default=False, metavar="CONFIG"),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a config value: PATH=VALUE, e.g. data.batch_size=128 or graph.optimizer.learning_rate=0.01; "
        "hooks.N.KEY sets a key of the N-th hook (from 0, as `hookrun validate` numbers them) (repeatable; VALUE is "
        "parsed as YAML).",
        show_default=False,
        metavar="PATH=VALUE",
    ),
]
ConfigOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--config",
        help="Another YAML config merged over CONFIG (repeatable, in order, before --set): mappings key by key, "
        "lists (hooks) and values replaced whole. Relative paths stay relative to CONFIG's directory.",
        show_default=False,
        metavar="FILE",
    ),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
RunDirArg = Annotated[
    Path,
    typer.Argument(
        help="The run directory `hookrun train` wrote.", show_default=False, metavar="RUN_DIR", parser=non_empty_path
    ),
]
CheckpointOption = Annotated[
    str,
    typer.Option(
        "--checkpoint",
        help="Which checkpoint: latest, best (kept by early_stopping), or a checkpoint prefix such as "
        "runs/x/model.ckpt-100.",
    ),
]
OverwriteOption = Annotated[bool, typer.Option("--overwrite", help="Replace the output if it exists.")]
ResultJsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show TensorFlow's INFO logs.")]
