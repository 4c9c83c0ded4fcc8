"""``hookrun validate CONFIG...``: check configs without training (no TensorFlow import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hookrun.cli.options import ConfigOption, DebugOption, SetOption


def input_elements(loaded: Any) -> dict[str, list[dict[str, str]]]:
    """Each ``data.input_fn``/``eval_input_fn``'s element (name, kind, dtype, shape per tensor); {} without one.

    Imports TensorFlow and calls each input function once more (see
    :func:`hookrun.runner.data.input_fn.element_specs`).
    """
    if loaded.config.data.input_fn is None:
        return {}
    from hookrun.runner.data.input_fn import element_specs
    from hookrun.runner.tf_env import import_tensorflow

    return element_specs(import_tensorflow(), loaded.config, loaded.base_dir)


def element_lines(elements: dict[str, list[dict[str, str]]]) -> list[str]:
    """``input_elements`` as lines: ``data.input_fn m:f gives:``, then ``  features['x']  float32  [None, 2]``."""
    lines = []
    for function, rows in elements.items():
        lines.append(f"{function} gives:")
        width = max(len(row["name"]) for row in rows)
        for row in rows:
            kind = "" if row["kind"] in ("dense", "none") else f"  {row['kind']}"
            lines.append(f"  {row['name']:<{width}}  {row['dtype']:<8} {row['shape']}{kind}".rstrip())
    return lines


def _validate_one(
    config: Path, overrides: list[str], print_: bool, build: bool, out: Any, err: Any, extra: list[Path] | None = None
) -> None:
    """Check one config and print its plan; raise ``HookrunError`` subclasses on failure."""
    from hookrun.cli.errors import print_issues
    from hookrun.cli.render import phase_plan, plan_table
    from hookrun.config_schemas.loader import ConfigError, resolved_yaml
    from hookrun.runner.config import load_checked
    from hookrun.runner.session.plan import plan

    loaded, issues = load_checked(config, overrides, configs=extra or [])
    if issues:
        print_issues(err, ConfigError(issues))
    built = None
    if build:
        from hookrun.runner.training.check import check_graph

        built = check_graph(loaded)
        built["elements"] = input_elements(loaded)
    if print_:
        out.print(resolved_yaml(loaded), markup=False, highlight=False, end="")
        return
    out.print(f"[green]ok[/]: {config} ({loaded.config.name}, builder {loaded.config.graph.builder})")
    if loaded.config.hooks:
        planned = plan(loaded.config.hooks)
        out.print(plan_table(planned))
        out.print(phase_plan(planned), highlight=False)
    else:
        out.print("no hooks: the run stops only when the data ends")
    if built is not None:
        lines = [
            f"graph built on {built['device']}, {built['hooks']} hook(s) ready (no session created)",
            "named tensors: " + ", ".join(built["named"]),
            *(
                ["model_fn training_hooks (run after the config's hooks, in this order): "
                 + ", ".join(built["training_hooks"])]
                if built.get("training_hooks")
                else []
            ),
            *(
                ["model_fn training_chief_hooks (run after the training_hooks, on the chief only): "
                 + ", ".join(built["training_chief_hooks"])]
                if built.get("training_chief_hooks")
                else []
            ),
            *(
                ["model_fn evaluation_hooks (run around each evaluation pass, in this order): "
                 + ", ".join(built["evaluation_hooks"])]
                if built.get("evaluation_hooks")
                else []
            ),
            *element_lines(built.get("elements") or {}),
            "trainable variables:",
            *(f"  {name} {shape}" for name, shape in built["trainable_variables"]),
        ]
        out.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def validate_command(
    configs: Annotated[list[Path], typer.Argument(help="YAML config file(s).", show_default=False)],
    set_: SetOption = None,
    config_: ConfigOption = None,
    print_: Annotated[
        bool, typer.Option("--print", help="Print the resolved config (defaults filled in) as YAML.")
    ] = False,
    build: Annotated[
        bool,
        typer.Option(
            "--build",
            help="Also build the graph and every hook (imports TensorFlow; resolves every tensor name). "
            "Creates no session and writes nothing.",
        ),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Check configs: schema, data file, hook list; print the planned hook order.

    --config FILE merges FILE over each config (repeatable, in order), as `hookrun train` does.
    Does not import TensorFlow unless --build is given. Every file is checked
    even when an earlier one fails. Warnings are printed and exit 0; any error exits 2.
    """
    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import reported_errors

    out = OutputConsole()
    err = OutputConsole(stderr=True)
    worst = 0
    for config in configs:
        try:
            with reported_errors(err, debug):
                _validate_one(config, set_ or [], print_, build, out, err, config_)
        except typer.Exit as exit_:
            worst = max(worst, exit_.exit_code)
    if worst:
        raise typer.Exit(worst)
