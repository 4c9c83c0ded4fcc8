"""CSV files (plain or ``.csv.gz``): a header row, then one row per line.

Pure Python: :func:`csv_rows` reads a file row by row with the line of each row, one row per line (as
``tf.data.TextLineDataset`` reads it), with a bound on the line length and, for a sample, on the characters
read. The statistics pass reads whole files with pyarrow's streaming CSV reader where it can
(:meth:`CsvFormat.fast_chunks`). ``tf.data`` reads lines and decodes them with ``tf.io.decode_csv``
(:meth:`CsvFormat.decode`). Every error is a one-line :class:`~hookrun.common.errors.DataError` naming the
file and line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from hookrun.common.errors import DataError
from hookrun.runner.data.columns import MISSING_MARKERS, NUMERIC, NUMERIC_BLOCK, ColumnPlan, RawColumns
from hookrun.runner.data.formats.base import MAX_LINE_CHARS, DataFile, FileFormat, FileSet, Rows, SlowPath
from hookrun.runner.data.formats.reading import ClosingRows
from hookrun.runner.data.formats.reading import guard as _guard
from hookrun.runner.data.formats.reading import open_file as _open
from hookrun.runner.data.formats.registry import accepted


def _bounded_lines(handle: IO[str], path: Path, budget: int | None) -> Iterator[str]:
    """The lines of ``handle``; a line over :data:`MAX_LINE_CHARS`, or more than ``budget`` characters in all, stops.

    Raises:
        DataError: a line longer than the bound (names the line).
    """
    used = 0
    number = 0
    while True:
        line = handle.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise DataError(
                f"{path}:{number}: a line longer than {MAX_LINE_CHARS:,} characters; not a CSV file? "
                f"hookrun reads {accepted()}"
            )
        used += len(line)
        if budget is not None and used > budget and number > 1:
            return  # a sample: what was read so far
        yield line


def csv_rows(
    file: DataFile, key: str = "data.train", budget: int | None = None
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """Open a CSV file: its header, and an iterator of ``(line, cells)`` for the data rows.

    One row per line, as ``tf.data.TextLineDataset`` reads it: blank lines are skipped, a quoted
    cell spanning lines is refused.

    Args:
        file: the file (``.csv`` or ``.csv.gz``).
        key: the config key, for messages; an option (``--data``) when the files came from the command
            line, relative to the current directory.
        budget: read at most about this many characters (a sample), or None for the whole file.

    Returns:
        ``(header, rows)``; ``line`` is 1-based in the (uncompressed) file, the header is line 1.

    Raises:
        DataError: (now, or while iterating) the file is unreadable, not UTF-8, not gzip, empty, has
            a header only, an empty or duplicate column name, a row with another number of cells
            than the header, a line over the length bound, a cell spanning lines.
    """
    path, loc = file.path, tuple(key.split("."))
    handle = _open(file, text=True)
    try:
        reader = csv.reader(_bounded_lines(handle, path, budget))
        header = _guard(path, loc, lambda: next(reader, None))
    except BaseException:
        handle.close()
        raise
    if header is None or not any(cell.strip() for cell in header):
        handle.close()
        raise DataError(f"{path}: the file is empty; it needs a header row and data rows", loc=loc)
    header = [cell.strip() for cell in header]
    for index, name in enumerate(header):
        if not name:
            handle.close()
            raise DataError(f"{path}:1: column {index + 1} has no name in the header", loc=loc)
        if name in header[:index]:
            handle.close()
            raise DataError(f"{path}:1: column {name!r} appears twice in the header", loc=loc)
    if reader.line_num != 1:
        handle.close()
        raise DataError(
            f"{path}:1: the header spans lines 1-{reader.line_num}; hookrun reads one row per line", loc=loc
        )

    def rows() -> Iterator[tuple[int, list[str]]]:
        with handle:
            previous = reader.line_num
            any_row = False
            while True:
                cells = _guard(path, loc, lambda: next(reader, None))
                if cells is None:
                    break
                line = reader.line_num
                if line - previous > 1 and cells:
                    raise DataError(
                        f"{path}:{previous + 1}: a quoted cell spans lines {previous + 1}-{line}; hookrun reads "
                        "one row per line (as tf.data.TextLineDataset): remove the line breaks inside cells",
                        loc=loc,
                    )
                previous = line
                if not cells:
                    continue  # blank line
                if len(cells) != len(header):
                    raise DataError(
                        f"{path}:{line}: row has {len(cells)} cells but the header has {len(header)} columns", loc=loc
                    )
                any_row = True
                yield line, cells
            if not any_row:
                raise DataError(f"{path}: has a header but no data rows", loc=loc)

    return header, ClosingRows(rows(), handle)



def arrow_chunks(file: DataFile, fileset: FileSet, plan: ColumnPlan) -> Iterator[RawColumns]:
    """Chunks of a CSV file read by pyarrow's streaming reader (``pyarrow.csv.open_csv``): fast.

    Every cell is read as text and checked as the Python path checks it (stripped, the missing
    markers, numbers as ``float64``). Row ``i`` is on line ``i + 2``: a blank line is kept as a row
    (``ignore_empty_lines=False``), then sends the file to the Python reader, as does a quoted line
    break (``newlines_in_values=False``), so the line numbers (and the split hash) are exact.

    Raises:
        SlowPath: pyarrow is not installed, the header differs, or a row or cell is not as expected:
            the caller reads the rest of the file with Python's ``csv`` module.
    """
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv
    except ImportError:
        raise SlowPath() from None
    names = plan.names
    try:
        reader = pacsv.open_csv(
            str(file.path),
            read_options=pacsv.ReadOptions(block_size=8 << 20),
            parse_options=pacsv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                include_columns=names,
                column_types={name: pa.string() for name in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        if [field.name for field in reader.schema] != names:
            raise SlowPath()
    except (pa.ArrowException, OSError):
        raise SlowPath() from None
    header, rows = csv_rows(file, fileset.key)  # the file's own header must be the set's (else: the exact error)
    rows.close()
    if header != fileset.columns:
        raise SlowPath()
    markers = pa.array(sorted(MISSING_MARKERS))
    start = 2
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except (pa.ArrowException, OSError):
            raise SlowPath() from None
        count = batch.num_rows
        blank = None  # a blank line reads as a row of empty cells: Python's reader skips it, so let it read this
        for column in batch.columns:
            empty_cell = pc.equal(column, "")
            blank = empty_cell if blank is None else pc.and_(blank, empty_cell)
        if blank is not None and pc.any(blank).as_py():
            raise SlowPath()
        values: dict[str, np.ndarray] = {}
        plain: set[str] = set()
        for index, name in enumerate(names):
            column = batch.column(index)
            stripped = pc.utf8_trim_whitespace(column)
            empty = pc.is_in(pc.utf8_lower(stripped), value_set=markers)
            if pc.all(pc.equal(column, stripped)).as_py() is not False and not pc.any(
                pc.and_(empty, pc.not_equal(stripped, ""))
            ).as_py():
                plain.add(name)
            missing = empty.to_numpy(zero_copy_only=False)
            if plan.kinds[name] == NUMERIC:
                try:
                    numbers = pc.cast(pc.if_else(empty, "nan", stripped), pa.float64()).to_numpy(zero_copy_only=False)
                except pa.ArrowException:
                    raise SlowPath() from None
                numbers = numbers.copy()
                numbers[missing] = np.nan
                values[name] = numbers
            else:
                texts = np.asarray(stripped.to_numpy(zero_copy_only=False), dtype=object)
                texts[missing] = None
                values[name] = texts
        lines = np.arange(start, start + count, dtype=np.int64)
        start += count
        yield RawColumns(
            source=file.path,
            lines=lines,
            positions={name: fileset.columns.index(name) for name in names},
            kinds=dict(plan.kinds),
            values=values,
            key=fileset.key,
            plain=plain,
        )

# ------------------------------------------------------------------ the format


class CsvFormat(FileFormat):
    """CSV: a header row (its column names), then one row per line; ``tf.data`` reads lines, ``decode_csv`` decodes."""

    name = "csv"
    extensions = (".csv", ".csv.gz")
    description = "CSV (.csv, .csv.gz)"
    rank = 0
    header_lines = 1
    skip_blank = True

    def rows(self, file: DataFile, fileset: FileSet, budget: int | None = None) -> tuple[list[str], Rows]:
        """The header and ``(line, cells)`` rows of a CSV file (:func:`csv_rows`)."""
        return csv_rows(file, fileset.key, budget)

    def fast_chunks(
        self, file: DataFile, fileset: FileSet, plan: ColumnPlan, chunk_rows: int
    ) -> Iterator[RawColumns]:
        """The file's rows read by pyarrow's streaming CSV reader (:func:`arrow_chunks`), once the header is known."""
        if not fileset.columns:
            raise SlowPath()
        yield from arrow_chunks(file, fileset, plan)

    def parse_record(self, record: bytes, names: list[str], columns: list[str]) -> list[str]:
        """Not used: :meth:`decode` decodes CSV lines with ``tf.io.decode_csv``."""
        raise NotImplementedError("CSV lines are decoded by tf.io.decode_csv")

    def decode(self, transform: Any, records: Any) -> dict[str, tuple[Any, Any, Any]]:
        """CSV lines -> cells with ``tf.io.decode_csv`` (only the used columns); numeric features as one block.

        A column whose every cell is plain (``transform.plain``: no padding, missing cells empty) is decoded as a
        ``float64`` number (NaN when empty) directly; the others as text, stripped and read as a CSV cell.
        """
        tf = transform.tf
        fileset = transform.fileset
        out: dict[str, tuple[Any, Any, Any]] = {}
        kinds = transform.state.kinds
        numeric = transform.numeric_names
        positions = sorted({fileset.columns.index(name) for name in transform.names})
        select = positions
        slot = {name: positions.index(fileset.columns.index(name)) for name in transform.names}
        # the numeric block decoded as numbers when every one of its columns is plain, else as text
        plain_block = all(name in transform.plain for name in numeric)
        by_slot = {slot[name]: name for name in transform.names}
        defaults = [
            tf.constant([np.nan], tf.float64)
            if by_slot[slot] in transform.plain and kinds[by_slot[slot]] == NUMERIC
            and (by_slot[slot] not in transform.numeric_set or plain_block)
            else tf.constant([""])
            for slot in range(len(select))
        ]
        cells = tf.io.decode_csv(records, record_defaults=defaults, select_cols=select)
        if numeric:
            block = tf.stack([cells[slot[name]] for name in numeric], axis=1)
            if plain_block:  # decoded as is: an empty cell (NaN) is the only missing one
                out[NUMERIC_BLOCK] = (None, block, tf.math.is_nan(block))
            else:
                _, number, missing = transform.text_numbers(block)
                out[NUMERIC_BLOCK] = (None, number, missing)
        for name in transform.names:
            if name in transform.numeric_set:
                continue
            if name in transform.plain:  # decoded as is: an empty cell is the only missing one
                cell = cells[slot[name]]
                if kinds[name] == NUMERIC:
                    out[name] = (None, cell, tf.math.is_nan(cell))
                else:
                    out[name] = (cell, None, tf.equal(cell, ""))
                continue
            text, number, missing = transform.text_numbers(cells[slot[name]])
            out[name] = (text, number if kinds[name] == NUMERIC else None, missing)
        return out


#: The format (found by :mod:`hookrun.runner.data.formats.registry`).
FORMAT = CsvFormat()
