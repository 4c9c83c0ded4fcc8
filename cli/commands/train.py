"""``hookrun train CONFIG``: validate, build the graph, run the hooks, show the history."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hookrun.cli.options import ConfigArg, DebugOption, SetOption


def train_command(
    config: ConfigArg,
    run_dir: Annotated[
        Path | None,
        typer.Option("--run-dir", help="Where artefacts go (overrides session.run_dir).", show_default=False),
    ] = None,
    set_: SetOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show TensorFlow's INFO logs.")] = False,
    allow_config_change: Annotated[
        bool,
        typer.Option(
            "--allow-config-change", help="Resume even if the graph or data shape differs from the saved config."
        ),
    ] = False,
    trace: Annotated[
        bool,
        typer.Option(
            "--trace",
            help="Record every hook method call to <run_dir>/trace.jsonl and print a per-hook cost table "
            "(as session.trace: true).",
        ),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Train: validate the config, build the graph, run the monitored session with the configured hooks.

    Re-running with the same run directory resumes from its latest checkpoint.
    Ctrl-C (or SIGTERM) finishes the current step, runs every hook's end()
    (so checkpoint_saver saves), and exits 130 (143 for SIGTERM); a second
    Ctrl-C exits at once.
    """
    from rich.console import Console

    from hookrun.cli.errors import print_issues, reported_errors
    from hookrun.cli.render import history_table, trace_table
    from hookrun.config_schemas.loader import ConfigError, load_config
    from hookrun.runner.preflight import preflight

    out = Console()
    err = Console(stderr=True)
    with reported_errors(err, debug):
        loaded = load_config(config, set_ or [])
        issues = preflight(loaded)
        if any(i.severity == "error" for i in issues):
            raise ConfigError(issues)
        if issues:
            print_issues(err, ConfigError(issues))
        from hookrun.runner.trainer import train

        result = train(
            loaded,
            run_dir=run_dir,
            console=out,
            verbose=verbose,
            allow_config_change=allow_config_change,
            trace=trace,
        )
        for note in result.notes:
            out.print(f"note: {note}", highlight=False)
        if result.history:
            out.print(history_table(result.history, result.history_columns))
        if result.trace_summary is not None:
            out.print(trace_table(result.trace_summary))
        if result.signal is not None:
            saved = f", checkpoint saved: {result.checkpoint_path}" if result.checkpoint_path else ""
            err.print(f"interrupted at step {result.final_global_step}{saved}", style="yellow", highlight=False)
            raise typer.Exit(128 + result.signal)
        how = "end of data" if result.end_of_data else "stop requested"
        out.print(
            f"trained {result.steps} steps (global step {result.initial_step} → {result.final_global_step}, {how}) "
            f"in {result.loop_seconds:.1f} s, {result.steps_per_sec:,.0f} steps/s",
            highlight=False,
        )
        out.print(f"run directory: {result.run_dir}", highlight=False)
        if result.checkpoint_path:
            out.print(f"checkpoint: {result.checkpoint_path}", highlight=False)
