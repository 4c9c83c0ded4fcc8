"""Rich renderables for the CLI: the history table, the hook plan, the hook catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from hookrun.runner.plan import PHASES, PlannedHook

#: At most this many history rows are shown; longer histories elide the middle.
MAX_HISTORY_ROWS = 24


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.4f}" if abs(value) < 1000 else f"{value:,.1f}"
    return str(value)


def history_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str = "History") -> Table:
    """The history rows as a table, columns as in ``history.csv``; the middle elided past 24 rows."""
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="right")
    shown: list[dict[str, Any] | None] = list(rows)
    if len(rows) > MAX_HISTORY_ROWS:
        half = MAX_HISTORY_ROWS // 2
        shown = [*rows[:half], None, *rows[-half:]]
    for row in shown:
        if row is None:
            table.add_row(*(["…"] * len(columns)), style="dim")
        else:
            table.add_row(*(_cell(row.get(c)) for c in columns))
    return table


def plan_table(planned: Sequence[PlannedHook]) -> Table:
    """The hooks in call order, with settings and what each mirrors."""
    table = Table(title="Hook plan (" + " → ".join(PHASES) + ", each in this order)", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("hook")
    table.add_column("settings")
    table.add_column("mirrors", style="dim")
    for item in planned:
        table.add_row(str(item.position), item.name, item.settings, item.mirrors)
    return table


def catalogue_table(entries: Sequence[dict[str, Any]]) -> Table:
    """The hook catalogue: type, description and parameters (``name: type = default``)."""
    table = Table(title="Hooks", title_justify="left", show_lines=True)
    table.add_column("type", style="bold")
    table.add_column("description")
    table.add_column("parameters")
    for entry in entries:
        params = []
        for p in entry["params"]:
            default = "required" if p["required"] else f"= {p['default']!r}"
            params.append(f"[cyan]{p['name']}[/]: {p['type']} {default}")
        table.add_row(entry["type"], f"{entry['summary']}\n[dim]mirrors {entry['mirrors']}[/]", "\n".join(params))
    return table
