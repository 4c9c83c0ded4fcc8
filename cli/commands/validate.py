"""``hookrun validate CONFIG``: check a config without training (no TensorFlow import)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from hookrun.cli.errors import print_issues, reported_errors
from hookrun.cli.options import ConfigArg, DebugOption, SetOption
from hookrun.cli.render import plan_table
from hookrun.config_schemas.loader import ConfigError, load_config, resolved_yaml
from hookrun.runner.plan import plan
from hookrun.runner.preflight import preflight


def validate_command(
    config: ConfigArg,
    set_: SetOption = None,
    print_: Annotated[
        bool, typer.Option("--print", help="Print the resolved config (defaults filled in) as YAML.")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Check a config: schema, data file, hook list; print the planned hook order.

    Does not import TensorFlow. Warnings are printed and exit 0; errors exit 2.
    """
    out = Console()
    err = Console(stderr=True)
    with reported_errors(err, debug):
        loaded = load_config(config, set_ or [])
        issues = preflight(loaded)
        errors = [i for i in issues if i.severity == "error"]
        if errors:
            raise ConfigError(issues)
        if issues:
            print_issues(err, ConfigError(issues))
        if print_:
            out.print(resolved_yaml(loaded), markup=False, highlight=False, end="")
            return
        out.print(f"[green]ok[/]: {config} ({loaded.config.name}, builder {loaded.config.graph.builder})")
        if loaded.config.hooks:
            out.print(plan_table(plan(loaded.config.hooks)))
        else:
            out.print("no hooks: the run stops only when the data ends")
