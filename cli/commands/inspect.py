"""``hookrun inspect CONFIG``: the graph's tensor names, aliases and variables (builds the graph, writes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hookrun.cli.options import ConfigArg, ConfigOption, DebugOption, SetOption, VerboseOption, non_empty_path


def inspect_command(
    config: ConfigArg,
    filter_: Annotated[
        str | None,
        typer.Option(
            "--filter",
            "-f",
            help="Show only names matching this: a glob (`hidden_*/kernel*`) when it has * ? or [, "
            "else a case-insensitive substring (`kernel`).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as JSON.")] = False,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir", help="The run directory (overrides session.run_dir); only read, never created.",
            show_default=False, parser=non_empty_path,
        ),
    ] = None,
    set_: SetOption = None,
    config_: ConfigOption = None,
    verbose: VerboseOption = False,
    debug: DebugOption = False,
) -> None:
    """List every tensor a hook may name (name, dtype, shape, op type), the aliases and the variables.

    Builds the graph and every hook exactly as train would (imports TensorFlow), creates no session
    and writes nothing. With data.input_fn, also what each input function gives: every feature's name,
    dtype and shape, and the labels'. Hook parameters such as summary_saver's `tensors` take any name listed.
    """
    import json

    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import print_issues, reported_errors
    from hookrun.config_schemas.loader import ConfigError
    from hookrun.runner.config import load_checked

    out = OutputConsole()
    err = OutputConsole(stderr=True)
    with reported_errors(err, debug):
        loaded, issues = load_checked(config, set_ or [], run_dir, configs=config_ or [])
        if issues:
            print_issues(err, ConfigError(issues))
        from hookrun.runner.training.check import inspect_graph

        inventory = inspect_graph(loaded, run_dir=run_dir, verbose=verbose).filtered(filter_)
        from hookrun.cli.commands.validate import element_lines, input_elements

        elements = input_elements(loaded)
        if as_json:
            typer.echo(json.dumps({**inventory.to_json(), "input_elements": elements}, indent=2))
            return
        from hookrun.cli.render import inventory_tables

        for renderable in inventory_tables(inventory):
            out.print(renderable)
        if elements:
            out.print("\n".join(element_lines(elements)), markup=False, highlight=False, soft_wrap=True)
