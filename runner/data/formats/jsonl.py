"""JSON lines (``.jsonl``, ``.jsonl.gz``): one JSON object a line, its keys the columns.

The third format, added as ``docs/architecture.md``'s recipe says: this module and nothing else.
The columns are the first object's keys in the order it writes them (a JSON object keeps its order;
``data.features`` chooses and orders them otherwise). A key an object lacks, or ``null``, is a missing
value; a number is read as its text (exact), a string as it is, ``true``/``false`` as text (a category).
An array or object value is refused: one value per column (a tensor needs your own ``data.input_fn``).
Blank lines are skipped and keep their number, as ``tf.data.TextLineDataset`` counts them. ``tf.data``
reads lines and decodes them with :meth:`JsonLinesFormat.parse_record` in a ``tf.numpy_function``
(the default :meth:`~hookrun.runner.data.formats.base.FileFormat.decode`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hookrun.common.errors import DataError
from hookrun.runner.data.formats.base import MAX_LINE_CHARS, DataFile, FileFormat, FileSet, Rows
from hookrun.runner.data.formats.reading import ClosingRows, guard, open_file


def _cell(value: Any) -> str | None:
    """A JSON value as a cell's text (None: not one value)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    return None


class JsonLinesFormat(FileFormat):
    """JSON lines: keyed records (one object a line), read in pure Python (``json``)."""

    name = "jsonl"
    extensions = (".jsonl", ".jsonl.gz")
    description = "JSON lines (.jsonl, .jsonl.gz)"
    keyed = True
    skip_blank = True

    def rows(self, file: DataFile, fileset: FileSet, budget: int | None = None) -> tuple[list[str], Rows]:
        """The columns (``fileset.columns``, else the first object's keys) and ``(line, cells)`` of every object.

        Raises:
            DataError: an empty file, a line that is not a JSON object, a value that is an array or an object,
                a line over :data:`~hookrun.runner.data.formats.base.MAX_LINE_CHARS` (names file and line).
        """
        path, loc = file.path, fileset.loc
        handle = open_file(file, text=True)

        def objects() -> Iterator[tuple[int, dict[str, Any]]]:
            used = number = 0
            while True:
                line = guard(path, loc, lambda: handle.readline(MAX_LINE_CHARS + 1))  # noqa: B023
                if not line:
                    return
                number += 1
                used += len(line)
                if len(line) > MAX_LINE_CHARS:
                    raise DataError(f"{path}:{number}: a line longer than {MAX_LINE_CHARS:,} characters", loc=loc)
                if not line.rstrip("\r\n"):
                    continue  # a blank line (TextLineDataset reads it as ""): no row; spaces are an error, as there
                try:
                    value = json.loads(line)
                except ValueError as err:
                    raise DataError(f"{path}:{number}: not a JSON object ({err})", loc=loc) from None
                if not isinstance(value, dict):
                    raise DataError(f"{path}:{number}: a JSON {type(value).__name__}, not an object", loc=loc)
                yield number, value
                if budget is not None and used > budget:
                    return

        found = objects()
        try:
            first = next(found, None)
        except BaseException:
            handle.close()
            raise
        if first is None:
            handle.close()
            raise DataError(f"{path}: the file is empty; it needs one JSON object a line", loc=loc)
        names = list(fileset.columns) if fileset.columns else list(first[1])

        def rows() -> Iterator[tuple[int, list[str]]]:
            with handle:
                for number, value in _chain(first, found):
                    cells = []
                    for name in names:
                        cell = _cell(value.get(name))
                        if cell is None:
                            raise DataError(
                                f"{path}:{number}: key {name!r} holds a {type(value[name]).__name__}; hookrun reads "
                                "one value per column (use your own data.input_fn for tensors)",
                                loc=loc,
                            )
                        cells.append(cell)
                    yield number, cells

        return names, ClosingRows(rows(), handle)

    def parse_record(self, record: bytes, names: list[str], columns: list[str]) -> list[str]:
        """One line's cells for ``names`` (the statistics pass already checked every line)."""
        value = json.loads(record.decode("utf-8-sig"))
        return [_cell(value.get(name)) or "" for name in names]



def _chain(first: tuple[int, dict[str, Any]], rest: Iterator[tuple[int, dict[str, Any]]]) -> Iterator[Any]:
    yield first
    yield from rest


#: The format (found by :mod:`hookrun.runner.data.formats.registry`).
FORMAT = JsonLinesFormat()
