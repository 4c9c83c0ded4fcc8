"""``hookrun list-hooks``: the hook catalogue (no TensorFlow import)."""

from __future__ import annotations

from typing import Annotated

import typer


def list_hooks_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalogue as JSON.")] = False,
) -> None:
    """List every hook type with a one-line description and its parameters (types, defaults)."""
    import json

    from rich.console import Console

    from hookrun.cli.render import catalogue_table
    from hookrun.hooks.catalogue import hook_catalogue

    entries = hook_catalogue()
    if as_json:
        typer.echo(json.dumps(entries, indent=2, default=str))
        return
    Console().print(catalogue_table(entries))
