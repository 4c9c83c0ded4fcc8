"""What every text or binary format's pure-Python reader shares: opening a (gzip) file, one-line read errors.

No TensorFlow here.
"""

from __future__ import annotations

import csv
import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from hookrun.common.errors import DataError
from hookrun.runner.data.formats.base import DataFile
from hookrun.runner.data.formats.registry import accepted


def open_file(file: DataFile, text: bool) -> IO[Any]:
    """Open a data file as UTF-8 text (a BOM dropped, newlines kept) or bytes, through gzip for ``.gz``."""
    if file.gzip:
        return gzip.open(file.path, "rt", encoding="utf-8-sig", newline="") if text else gzip.open(file.path, "rb")
    return file.path.open(newline="", encoding="utf-8-sig") if text else file.path.open("rb")


def guard(path: Path, loc: tuple[str, ...], read: Any) -> Any:
    """Run one read of a CSV, turning decoding and format failures into one-line errors."""
    try:
        return read()
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason}); hookrun reads {accepted()}", loc=loc) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise DataError(f"{path}: not a valid gzip file ({err}); hookrun reads {accepted()}", loc=loc) from None
    except PermissionError:
        raise DataError(f"{path}: not readable (permission denied)", loc=loc) from None
    except csv.Error as err:
        raise DataError(f"{path}: not a valid CSV file ({err})", loc=loc) from None
    except OSError as err:
        raise DataError(f"{path}: cannot read the data file ({err.strerror or err})", loc=loc) from None


class ClosingRows:
    """A generator of ``(line, cells)`` rows whose ``close()`` also closes the file, even before the first row.

    (A generator closed before it started never enters its ``with handle:`` block, so the file stayed
    open until garbage collection, with a ``ResourceWarning``.) Every pure-Python reader returns its rows in one.
    """

    def __init__(self, rows: Iterator[tuple[int, list[str]]], handle: Any) -> None:
        self._rows, self._handle = rows, handle

    def __iter__(self) -> ClosingRows:
        return self

    def __next__(self) -> tuple[int, list[str]]:
        return next(self._rows)

    def close(self) -> None:
        """Stop the rows and close the file."""
        self._rows.close()
        self._handle.close()
