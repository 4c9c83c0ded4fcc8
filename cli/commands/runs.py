"""``hookrun runs [DIR]``: a table of the runs under DIR, to compare them (no TensorFlow)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hookrun.cli.options import DebugOption

if TYPE_CHECKING:
    from hookrun.runner.trained.runs import RunsTable


def runs_command(
    directory: Annotated[
        Path,
        typer.Argument(
            help="A directory of run directories (a sweep's too), or one run directory.", metavar="DIR",
        ),
    ] = Path("runs"),
    sort: Annotated[
        str | None,
        typer.Option(
            "--sort",
            help="Sort by a val_* metric (its best value first), or by name, started, steps, wall_seconds, status "
            "(default: by start time).",
            show_default=False,
            metavar="METRIC",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
    debug: DebugOption = False,
) -> None:
    """Compare runs: one row per run directory with its status, steps, wall time, val_* values and --set.

    Each val_* metric shows its final value and its best one (lowest; highest for accuracy, auc and an
    early_stopping with mode: max), from history.csv, summary.json and hookrun evaluate's eval files.
    Status is finished, interrupted, failed or running (a live process holds the run directory).
    """
    import json

    from rich.console import Console

    from hookrun.cli.errors import reported_errors

    out = Console()
    err = Console(stderr=True)
    with reported_errors(err, debug):
        from hookrun.runner.trained.runs import list_runs

        table = list_runs(directory, sort=sort)
        if as_json:
            typer.echo(json.dumps(table.to_json(), indent=2))
            return
        render_runs(out, table)


def render_runs(console: Any, table: RunsTable) -> None:
    """Print a :class:`~hookrun.runner.trained.runs.RunsTable` as a rich table, then its notes.

    One column per ``val_*`` metric, ``final / best@step`` (4 significant digits; ``--json`` has every
    digit); the overrides that differ, each by its last key unless two share it.
    """
    from rich.table import Table

    if not table.runs:
        console.print(f"no runs in {table.root}", highlight=False, soft_wrap=True)
    else:
        grid = Table(title=f"runs in {table.root}" + (f", by {table.sort}" if table.sort else ""))
        # the short columns never wrap; names, values and overrides wrap on a narrow terminal
        grid.add_column("run", overflow="fold", min_width=8)
        grid.add_column("started (UTC)", no_wrap=True, min_width=11)
        grid.add_column("status", no_wrap=True, min_width=11)
        grid.add_column("steps", justify="right", no_wrap=True, min_width=5)
        grid.add_column("wall", justify="right", no_wrap=True, min_width=7)
        for metric in table.metrics:
            grid.add_column(f"{metric}\nfinal / best@step", justify="right", overflow="fold", min_width=8)
        grid.add_column("--set that differs", overflow="fold", min_width=8)
        styles = {"finished": "green", "interrupted": "yellow", "failed": "red", "running": "cyan"}
        short = _short_overrides([o for row in table.runs for o in row.distinguishing])
        for row in table.runs:
            cells = [
                row.name,
                (row.started or "")[5:16].replace("T", " "),  # MM-DD HH:MM
                f"[{styles.get(row.status, 'magenta')}]{row.status}[/]",
                "" if row.steps is None else f"{row.steps:,}",
                "" if row.wall_seconds is None else f"{row.wall_seconds:.1f} s",
            ]
            for metric in table.metrics:
                value = row.metrics.get(metric)
                cells.append("" if value is None else f"{value.final:.4g} / {value.best:.4g}@{value.best_step}")
            cells.append(" ".join(short[o] for o in row.distinguishing))
            grid.add_row(*cells)
        console.print(grid)
    for row in table.runs:
        for line in ([row.error] if row.error else []) + row.notes:
            console.print(f"note: {row.name}: {line}", highlight=False, soft_wrap=True, markup=False)
    for line in table.skipped:
        console.print(f"note: skipped {line}", highlight=False, soft_wrap=True, markup=False)


def _short_overrides(overrides: list[str]) -> dict[str, str]:
    """``graph.optimizer.learning_rate=0.1`` -> ``learning_rate=0.1``, unless two paths share that last key."""
    paths = {o.partition("=")[0] for o in overrides}
    lasts = [p.split(".")[-1] for p in paths]
    shortened = {}
    for override in overrides:
        path, _, value = override.partition("=")
        last = path.split(".")[-1]
        shortened[override] = f"{last}={value}" if lasts.count(last) == 1 else override
    return shortened
