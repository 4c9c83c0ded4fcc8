"""``hookrun runs [DIR]``: a table of the runs under DIR, to compare them (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from hookrun.cli.options import DebugOption
from hookrun.cli.printable import printable

if TYPE_CHECKING:
    from hookrun.runner.trained.runs import RunsTable


#: Skipped entries named under the table (the rest are counted; ``--json`` has them all).
SKIPPED_SHOWN = 20

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

    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import reported_errors

    out = OutputConsole()
    err = OutputConsole(stderr=True)
    with reported_errors(err, debug):
        from hookrun.runner.trained.runs import list_runs

        table = list_runs(directory, sort=sort)
        if as_json:
            typer.echo(json.dumps(table.to_json(), indent=2))
            return
        render_runs(out, table)


@dataclass
class _Column:
    """One column of the runs table: its header, ``add_column`` options, and one cell per run (rich markup)."""

    key: str
    header: str
    cells: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    stacked: list[str] | None = None  # the cells one item a line, tried when one line each does not fit


def _columns(table: RunsTable) -> list[_Column]:
    """Every column the table can show, in display order."""
    from hookrun.common.numbers import format_number

    styles = {"finished": "green", "interrupted": "yellow", "failed": "red", "running": "cyan"}
    short = _short_overrides([o for row in table.runs for o in row.distinguishing])
    right = {"justify": "right", "no_wrap": True}
    columns = [
        _Column("name", "run", [escape(printable(row.name)) for row in table.runs], {"overflow": "fold"}),
        _Column("started", "started (UTC)",  # MM-DD HH:MM (a hand-edited `started` is any text: escaped)
                [escape(printable((row.started or "")[5:16].replace("T", " "))) for row in table.runs],
                {"no_wrap": True}),
        _Column("status", "status", [f"[{styles.get(row.status, 'magenta')}]{escape(printable(row.status))}[/]"
                                     for row in table.runs], {"no_wrap": True}),
        _Column("steps", "steps", ["" if row.steps is None else f"{row.steps:,}" for row in table.runs], right),
        _Column("wall_seconds", "wall", ["" if row.wall_seconds is None else f"{row.wall_seconds:.1f} s"
                                         for row in table.runs], right),
    ]
    for metric in table.metrics:
        values = [row.metrics.get(metric) for row in table.runs]
        columns.append(_Column(
            metric, escape(printable(metric)),
            ["" if v is None else f"{format_number(v.final)} / "
             + ("-" if v.best is None else f"{format_number(v.best)}@{v.best_step}") for v in values],
            {"justify": "right", "overflow": "fold"},
        ))
    overrides = [[escape(printable(short[o])) for o in row.distinguishing] for row in table.runs]
    columns.append(_Column(
        "overrides", "--set that differs", [" ".join(o) for o in overrides], {"overflow": "fold"},
        stacked=["\n".join(o) for o in overrides],
    ))
    return columns


def _priority(table: RunsTable) -> tuple[list[str], int]:
    """Column keys, most wanted first, and how many of them are always shown.

    Always: run, status, the --sort column (else the first metric), and every metric a run monitors
    (``early_stopping``'s ``val_rmse``). Then the first metric, steps, the overrides, the other metrics,
    wall time and start time.
    """
    first = [table.metrics[0]] if table.metrics else []
    base = list(dict.fromkeys(["name", "status", *([table.sort] if table.sort else []), *first]))[:3]
    always = list(dict.fromkeys([*base, *table.monitored]))
    wanted = [*always, *first, "steps", "overrides", *table.metrics[1:], "wall_seconds", "started"]
    return list(dict.fromkeys(wanted)), len(always)


def _grid(table: RunsTable, columns: list[_Column]) -> Any:
    from rich import box
    from rich.table import Table

    metrics = any(c.key in table.metrics for c in columns)
    grid = Table(
        title=escape(printable(f"runs in {table.root}" + (f", by {table.sort}" if table.sort else ""))),
        caption="val_*: final / best@step" if metrics else None,
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
    )
    for column in columns:
        grid.add_column(column.header, **column.options)
    for index in range(len(table.runs)):
        grid.add_row(*(column.cells[index] for column in columns))
    return grid


def fit_columns(console: Any, table: RunsTable) -> tuple[list[_Column], list[str]]:
    """The columns that fit ``console.width`` without wrapping, and the headers of those left out.

    Run, status and the ``--sort`` column (without ``--sort``, or sorted by name or status: the
    first ``val_*`` metric) are always shown; when even they do not fit, a metric wraps at its
    ``" / "`` and a run name folds only beyond what the others leave. Then each of these whose widest
    cell fits beside those already chosen (``rich.measure``): the first ``val_*`` metric, steps, the
    overrides that differ (one a line if they do not fit on one), the other metrics, wall time and
    start time.

    Args:
        console: the ``rich`` console printed to (its ``width``).
        table: the runs.

    Returns:
        ``(columns shown, in display order; headers of the columns left out, most wanted first)``.
    """
    from rich.measure import Measurement
    from rich.text import Text

    columns = _columns(table)
    wide = console.options.update(max_width=1 << 16)  # each column's natural width, not squeezed to the console's
    by_key = {c.key: c for c in columns}
    order, always = _priority(table)
    chosen = set(order[:always])  # run, status, the --sort column (by default the first val_*), the monitored
    for key in order:
        if key in chosen:
            continue
        column = by_key[key]
        one_line = column.cells
        for cells in [one_line] + ([column.stacked] if column.stacked is not None else []):
            column.cells = cells
            trial = [c for c in columns if c.key in chosen | {key}]
            if Measurement.get(console, wide, _grid(table, trial)).maximum <= console.width:
                chosen.add(key)
                break
        else:
            column.cells = one_line
    shown = [c for c in columns if c.key in chosen]
    if Measurement.get(console, wide, _grid(table, shown)).maximum > console.width:
        # Even the three do not fit on one line: the name keeps what the others leave at their narrowest
        # (a metric wraps at its " / "), and folds only beyond that.
        others = sum(max(len(word) for text in [c.header, *c.cells] for word in Text.from_markup(text).plain.split())
                     for c in shown if c.key != "name")
        name = by_key["name"]
        longest = max(len(text) for text in [name.header, *name.cells])
        name.options = {**name.options, "width": max(8, min(longest, console.width - others - 3 * (len(shown) - 1)))}
    return shown, [by_key[k].header for k in order if k not in chosen]


def render_runs(console: Any, table: RunsTable) -> None:
    """Print a :class:`~hookrun.runner.trained.runs.RunsTable` as a rich table, then its notes.

    Names, overrides and notes come from files anyone could write: their control characters print as
    escapes (:func:`~hookrun.cli.printable.printable`), so no row is split and no escape sequence reaches the
    terminal. One column per ``val_*`` metric, ``final / best@step`` (:func:`~hookrun.common.numbers.format_number`;
    ``--json`` has every digit); the overrides that differ, each by its last key unless two share it.
    Columns that do not fit the console's width are left out (see :func:`fit_columns`), named in a note
    under the table.
    """
    if not table.runs:
        console.print(f"no runs in {printable(table.root)}", highlight=False, soft_wrap=True, markup=False)
    else:
        shown, left_out = fit_columns(console, table)
        console.print(_grid(table, shown))
        if left_out:
            console.print(
                f"note: not shown at {console.width} columns: {', '.join(left_out)} (a wider terminal shows "
                "them; --json has everything)",
                highlight=False, markup=False,
            )
    for row in table.runs:
        for line in ([row.error] if row.error else []) + row.notes:
            console.print(f"note: {printable(row.name)}: {printable(line)}", highlight=False, soft_wrap=True,
                          markup=False)
    for line in table.skipped[:SKIPPED_SHOWN]:
        console.print(f"note: skipped {printable(line)}", highlight=False, soft_wrap=True, markup=False)
    if len(table.skipped) > SKIPPED_SHOWN:  # a directory of thousands of other entries: not a page of notes
        more = len(table.skipped) - SKIPPED_SHOWN
        console.print(f"note: skipped {more:,} more (--json lists them all)", highlight=False, markup=False)


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
