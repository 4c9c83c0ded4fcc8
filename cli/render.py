"""Rich renderables for the CLI: the history table, the hook plan, the hook catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, ConsoleOptions, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from hookrun.common.numbers import format_number
from hookrun.config_schemas.hook_base import LIFECYCLE_METHODS
from hookrun.runner.session.plan import FINISHING_RULES, PHASE_WHEN, PHASES, PlannedHook

if TYPE_CHECKING:
    from hookrun.runner.graph.tensor_names import GraphInventory
    from hookrun.runner.session.trace import TraceSummary

#: At most this many history rows are shown; longer histories elide the middle.
MAX_HISTORY_ROWS = 24


def _cell(value: Any) -> str:
    """A history cell: a float as everywhere in hookrun (:func:`~hookrun.common.numbers.format_number`), else as is."""
    if value is None:
        return ""
    if isinstance(value, float):
        return format_number(value)
    return str(value)


class HistoryTables:
    """The history as one table when it fits the console's width, else as several, each with ``step`` first.

    Nothing is cut short: no header or value ends in ``…`` (rich's default when a table is squeezed).
    The columns are split in ``history.csv``'s order into as few tables as fit (training columns, then
    validation ones, for the usual history); each repeats ``step`` and the ``◀ best`` marker, and the
    note explaining the columns comes once, under the last, as wide as the console (a three-column
    table's caption would be a narrow column of text). A single column too wide for the
    console folds (it is never truncated).

    Args:
        rows, columns, title, best_step, best_monitor: as :func:`history_table`.
    """

    def __init__(
        self,
        rows: Sequence[dict[str, Any]],
        columns: Sequence[str],
        title: str = "History",
        best_step: int | None = None,
        best_monitor: str | None = None,
    ) -> None:
        self.rows = list(rows)
        self.columns = list(columns)
        self.title = title
        self.best_step = best_step
        self.best_monitor = best_monitor

    def table(self, columns: Sequence[str] | None = None, part: str = "", caption: bool = True) -> Table:
        """One table of ``columns`` (default: every column), with the caption unless ``caption`` is False."""
        return _history_table(
            self.rows, self.columns if columns is None else columns, self.title + part, self.best_step,
            self.best_monitor, caption, key_columns=self.columns,
        )

    def groups(self, console: Console, width: int) -> list[list[str]]:
        """The columns split into as few groups as fit ``width`` (each group's table with ``step`` first)."""
        wide = console.options.update(max_width=1 << 16)  # each table's natural width, unsqueezed

        def fits(group: list[str]) -> bool:
            return Measurement.get(console, wide, self.table(group, caption=False)).maximum <= width

        if fits(self.columns):
            return [self.columns]
        key = [c for c in self.columns[:1] if c == "step"]
        training = [c for c in self.columns[len(key):] if not c.startswith("val_")]
        validation = [c for c in self.columns[len(key):] if c.startswith("val_")]
        if training and validation and fits([*key, *training]) and fits([*key, *validation]):
            return [[*key, *training], [*key, *validation]]  # the usual split: training, then validation
        groups: list[list[str]] = []
        current: list[str] = []
        for column in self.columns[len(key):]:
            if current and not fits([*key, *current, column]):
                groups.append([*key, *current])
                current = []
            current.append(column)
        if current:
            groups.append([*key, *current])
        return groups

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Any:
        """The table, or the tables, that fit ``options.max_width``."""
        groups = self.groups(console, options.max_width)
        for index, group in enumerate(groups):
            if index:
                yield Text("")  # a blank line between the split tables
            yield self.table(group, f" ({index + 1}/{len(groups)})" if len(groups) > 1 else "", caption=False)
        notes = _history_notes(self.rows, self.columns, self.best_step, self.best_monitor)
        if notes:  # once, under the last table, as wide as the console (a narrow table's caption would be a column)
            yield Text("; ".join(notes))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the widest table printed at ``options.max_width``."""
        groups = self.groups(console, options.max_width)
        widths = [Measurement.get(console, options, self.table(g, caption=False)) for g in groups]
        return Measurement(max(w.minimum for w in widths), max(w.maximum for w in widths))


def history_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    title: str = "History",
    best_step: int | None = None,
    best_monitor: str | None = None,
) -> HistoryTables:
    """The history rows as a table, columns as in ``history.csv``; the middle elided past 24 rows.

    Split into several tables, each with ``step`` first, when one does not fit the console (see
    :class:`HistoryTables`), so a history reads at 80 columns with no header or value cut short.

    Args:
        rows: one dict per history row (``step`` and the ``columns``).
        columns: the column names, ``history.csv``'s order.
        title: the table's title.
        best_step: the global step of the best evaluation (``early_stopping``), marked ``◀ best`` in a
            last column (the row is kept even when the middle is elided), or None.
        best_monitor: the value that made it the best (``val_loss``), named in the caption.

    The caption explains ``mean_loss`` and ``total_loss`` (the window's sum, not a running total).
    """
    return HistoryTables(rows, columns, title, best_step, best_monitor)


def _history_notes(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], best_step: int | None, best_monitor: str | None
) -> list[str]:
    """What the history's caption explains: ``mean_loss``, ``total_loss``, the ``◀ best`` marker."""
    notes = []
    if "mean_loss" in columns:
        notes.append("mean_loss: mean training loss over the window ending at `step`")
        if "total_loss" in columns:
            notes.append("total_loss: its sum over that window (mean_loss × steps), not a running total")
    if best_step is not None and any(row.get("step") == best_step for row in rows):
        notes.append(f"◀ best: the best {best_monitor or 'evaluation'} (early_stopping)")
    return notes


def _history_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    title: str,
    best_step: int | None,
    best_monitor: str | None,
    with_caption: bool = True,
    key_columns: Sequence[str] | None = None,
) -> Table:
    """One rich table of ``columns`` of the history (see :func:`history_table`)."""
    notes = _history_notes(rows, key_columns if key_columns is not None else columns, best_step, best_monitor)
    marked = best_step is not None and any(row.get("step") == best_step for row in rows)
    caption = "; ".join(notes) if notes and with_caption else None
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, caption=caption,
                  caption_justify="left")
    for column in columns:
        table.add_column(column, justify="right", no_wrap=column == "step", overflow="fold")
    if marked:
        table.add_column("", no_wrap=True)
    shown: list[dict[str, Any] | None] = list(rows)
    if len(rows) > MAX_HISTORY_ROWS:
        half = MAX_HISTORY_ROWS // 2
        head, tail = list(rows[:half]), list(rows[-half:])
        middle = [row for row in rows[half:-half] if marked and row.get("step") == best_step]
        shown = [*head, None, *middle, *([None] if middle else []), *tail]
    width = len(columns) + (1 if marked else 0)
    for row in shown:
        if row is None:
            table.add_row(*(["…"] * width), style="dim")
            continue
        cells = [_cell(row.get(c)) for c in columns]
        if marked:
            is_best = row.get("step") == best_step
            cells.append("◀ best" if is_best else "")
            table.add_row(*cells, style="bold" if is_best else None)
        else:
            table.add_row(*cells)
    return table


def plan_table(planned: Sequence[PlannedHook]) -> Table:
    """The hooks in call order (every lifecycle phase calls them in this order), with settings and what each mirrors."""
    table = Table(title="Hook plan: every phase below calls the hooks in this order", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("hook", no_wrap=True)
    table.add_column("settings", overflow="fold")
    table.add_column("mirrors", style="dim", overflow="fold")
    for item in planned:
        table.add_row(str(item.position), item.name, item.settings, item.mirrors)
    return table


def phase_plan(planned: Sequence[PlannedHook]) -> Group:
    """The legend under :func:`plan_table`: when TensorFlow calls each lifecycle phase, and how a run finishes."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for phase in PHASES:
        grid.add_row(f"  {phase}", PHASE_WHEN[phase])
    finishing = Table.grid(padding=(0, 1))
    finishing.add_column(width=1)
    finishing.add_column()
    for rule in FINISHING_RULES:
        finishing.add_row("", rule)
    return Group(Text("Phases:"), grid, Text("Finishing:"), finishing)


def trace_table(summary: TraceSummary) -> Table:
    """Per-hook cost of a traced run: calls, total and mean time per method, share of the step loop.

    The share is the method's total time over the step loop's wall time, for ``before_run`` and
    ``after_run`` (the methods called inside the loop).
    """
    hooks_seconds = sum(h.step_seconds for h in summary.hooks)
    share = f"{hooks_seconds / summary.loop_seconds:.1%}" if summary.loop_seconds > 0 else "n/a"
    caption = (
        f"hooks' before_run + after_run: {hooks_seconds:.3f} s of the {summary.loop_seconds:.3f} s step loop ({share})"
    )
    if summary.path is not None:
        caption += f"; every call in {summary.path}"
    table = Table(title="Hook cost (trace)", title_justify="left", caption=caption, caption_justify="left")
    table.add_column("#", justify="right")
    table.add_column("hook")
    table.add_column("method", no_wrap=True, min_width=len("after_create_session"))
    table.add_column("calls", justify="right")
    table.add_column("total s", justify="right")
    table.add_column("mean ms", justify="right")
    table.add_column("loop %", justify="right")
    for hook in summary.hooks:
        first = True
        for method in LIFECYCLE_METHODS:
            cost = hook.methods.get(method)
            if cost is None:
                continue
            loop_share = ""
            if method in ("before_run", "after_run") and summary.loop_seconds > 0:
                loop_share = f"{cost.total_seconds / summary.loop_seconds:.1%}"
            table.add_row(
                str(hook.position) if first else "",
                hook.hook if first else "",
                method,
                str(cost.calls),
                f"{cost.total_seconds:.4f}",
                f"{cost.mean_seconds * 1000:.3f}",
                loop_share,
            )
            first = False
    return table


def catalogue_table(entries: Sequence[dict[str, Any]]) -> Table:
    """The hook catalogue overview: type, then what it does, the TensorFlow hook it mirrors, its parameter names.

    Nothing is cut short (a long name folds onto the next line), so it reads at 80 columns.
    """
    table = Table(title="Hooks (`hookrun list-hooks TYPE` for one hook's parameters)", title_justify="left",
                  show_lines=True)
    table.add_column("type", style="bold", no_wrap=True)
    table.add_column("what it does, what it mirrors, its parameters", overflow="fold")
    for entry in entries:
        what = Text(entry["summary"])
        what.append("\nmirrors " + entry["mirrors"], style="dim")
        if entry["params"]:
            what.append("\nparams: ", style="dim")
            what.append(", ".join(p["name"] for p in entry["params"]), style="cyan")
        table.add_row(entry["type"], what)
    return table


def builders_table(entries: Sequence[dict[str, Any]]) -> Table:
    """The built-in graph builders (``graph.builder``): name, what it builds, ``graph.params`` names."""
    table = Table(title="Graph builders (`graph.builder`; `hookrun list-hooks NAME` for one's params)",
                  title_justify="left", show_lines=True)
    table.add_column("builder", style="bold", no_wrap=True)
    table.add_column("what it builds, its params", overflow="fold")
    for entry in entries:
        what = Text(entry["summary"])
        what.append("\nparams: ", style="dim")
        what.append(", ".join(p["name"] for p in entry["params"]), style="cyan")
        table.add_row(entry["name"], what)
    return table


def columns_table(entries: Sequence[dict[str, Any]]) -> Table:
    """The YAML ``feature_columns`` kinds: key, the TensorFlow constructor and R tfestimators' name, arguments."""
    table = Table(title="Feature columns (`*feature_columns:` entries; `hookrun list-hooks KIND` for one's arguments)",
                  title_justify="left", show_lines=True)
    table.add_column("kind", style="bold", no_wrap=True)
    table.add_column("mirrors, its arguments", overflow="fold")
    for entry in entries:
        what = Text(f"{entry['tensorflow']} (R: {entry['r']})")
        what.append("\narguments: ", style="dim")
        what.append(", ".join(p["name"] for p in entry["params"]), style="cyan")
        table.add_row(entry["name"], what)
    return table


def params_table(title: str, summary: str, mirrors: str | None, params: Sequence[dict[str, Any]]) -> Group:
    """One hook's or builder's full parameter table: name, type, default, description."""
    head = Text.assemble((title, "bold"), ": ", summary)
    if mirrors:
        head.append(f"\nmirrors {mirrors}", style="dim")
    table = Table(show_edge=False, pad_edge=False, box=box.SIMPLE_HEAD)
    table.add_column("parameter", style="cyan", no_wrap=True)
    longest = max((len(token) for p in params for token in p["type"].split()), default=0)  # no literal cut in two
    table.add_column("type", overflow="fold", ratio=1, min_width=min(longest, 30))
    table.add_column("default", overflow="fold", ratio=1)
    table.add_column("description", overflow="fold", ratio=3)
    for p in params:
        default = "required" if p["required"] else repr(p["default"])
        table.add_row(Text(p["name"]), Text(p["type"]), Text(default), Text(p["description"]))
    return Group(head, Text(""), table)


def _shape_text(shape: Sequence[int | None] | None) -> str:
    """``[?, 1]`` for a static shape (``?`` an unknown dimension), ``[]`` a scalar, ``<unknown>`` an unknown rank."""
    if shape is None:
        return "<unknown>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def inventory_tables(inventory: GraphInventory) -> list[Any]:
    """``hookrun inspect``'s tables: the aliases, the variables, then every nameable tensor.

    Names are never cut short (a long one wraps); a variable's handle shows dtype ``resource*``.
    """

    def table(title: str, *columns: str) -> Table:
        made = Table(title=title, title_justify="left")
        for i, column in enumerate(columns):
            made.add_column(column, overflow="fold", ratio=3 if i == 0 else None)
        return made

    aliases = table("Aliases: names hooks may use, and the tensor each resolves to", "alias", "tensor", "dtype",
                    "shape", "op")
    for alias in inventory.aliases:
        t = alias.tensor
        aliases.add_row(alias.alias, t.name, t.dtype, _shape_text(t.shape), t.op)
    variables = table("Variables", "variable", "dtype", "shape", "trainable", "read as")
    for v in inventory.variables:
        variables.add_row(v.name, v.dtype, _shape_text(v.shape), "yes" if v.trainable else "", v.reads)
    tensors = table(f"Tensors ({len(inventory.tensors)})", "tensor", "dtype", "shape", "op")
    for t in inventory.tensors:
        tensors.add_row(t.name, t.dtype if t.reads is None else f"{t.dtype}*", _shape_text(t.shape), t.op)
    trainable = sum(v.trainable for v in inventory.variables)
    footer = Text(
        f"device {inventory.device}; {len(inventory.tensors)} tensor(s), {len(inventory.variables)} global "
        f"variable(s), {trainable} trainable. resource*: a variable's handle; naming it (or the variable) "
        "reads the variable's value, `<variable>/Read/ReadVariableOp:0`."
    )
    return [aliases, variables, tensors, footer]
