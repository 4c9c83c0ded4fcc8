"""Options shared by several commands (one definition each)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigArg = Annotated[
    Path,
    typer.Argument(help="The YAML config file.", show_default=False, metavar="CONFIG"),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a config value: PATH=VALUE, e.g. hooks.2.every_n_iter=50 or data.batch_size=128 "
        "(repeatable; VALUE is parsed as YAML).",
        show_default=False,
        metavar="PATH=VALUE",
    ),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
