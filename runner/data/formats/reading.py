"""What every text or binary format's pure-Python reader shares: opening a (gzip) file, one-line read errors.

No TensorFlow here.
"""

from __future__ import annotations

import csv
import gzip
import zlib
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
