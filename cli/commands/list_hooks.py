"""``hookrun list-hooks [NAME]``: the hook catalogue and the built-in graph builders (no TensorFlow import)."""

from __future__ import annotations

from typing import Annotated

import typer


def list_hooks_command(
    name: Annotated[
        str | None,
        typer.Argument(
            help="A hook type (e.g. evaluation) or a built-in graph builder: show its full parameter table.",
            show_default=False,
            metavar="NAME",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalogue (or NAME's entry) as JSON.")] = False,
) -> None:
    """List every hook type and built-in graph builder with what it does and its parameters.

    With NAME, show that hook's (or builder's) parameters: name, type, default and description.
    An unknown NAME exits 2 with the closest known name.
    """
    import json

    from hookrun.cli.console import OutputConsole
    from hookrun.cli.render import builders_table, catalogue_table, columns_table, params_table
    from hookrun.hooks.catalogue import builder_catalogue, column_catalogue, hook_catalogue

    hooks = hook_catalogue()
    builders = builder_catalogue()
    columns = column_catalogue()
    out = OutputConsole()
    if name is None:
        if as_json:
            typer.echo(json.dumps(hooks, indent=2, default=str))
            return
        out.print(catalogue_table(hooks))
        out.print()
        out.print(builders_table(builders))
        out.print()
        out.print(columns_table(columns))
        return
    by_name = {e["name"]: e for e in columns} | {e["type"]: e for e in hooks} | {e["name"]: e for e in builders}
    entry = by_name.get(name)
    if entry is None:
        from hookrun.common.suggest import did_you_mean

        typer.echo(
            f"error: no hook type or graph builder named `{name}`{did_you_mean(name, by_name)} "
            "(`hookrun list-hooks` lists them)",
            err=True,
        )
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(entry, indent=2, default=str))
        return
    title = entry.get("type") or entry["name"]
    kind = "hook" if "type" in entry else "feature column" if "tensorflow" in entry else "graph builder"
    out.print(params_table(f"{title} ({kind})", entry["summary"], entry.get("mirrors"), entry["params"]))
