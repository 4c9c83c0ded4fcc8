"""A run's status in ``summary.json``: running, finished, interrupted or failed, with its times and ``--set``.

The trainer writes ``summary.json`` three times at most: when training starts (``status: running``,
the earlier session's values kept on a resume), and at the end, whole (``finished`` or
``interrupted``), or, when training raised, the start record with ``status: failed`` and the error.
A run killed outright (``kill -9``, power loss) leaves ``running`` behind; ``hookrun runs`` tells
it from a live run by the run directory's lock (:mod:`hookrun.runner.run_dir.directory`).
No TensorFlow.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hookrun.common.files import atomic_write_text, loads_json, read_regular_bytes

#: The run's summary, in the run directory.
SUMMARY_FILE = "summary.json"
#: Values of ``summary.json``'s ``status``.
STATUSES = ("running", "finished", "interrupted", "failed")


def utc_now() -> str:
    """The current time, UTC, as ISO 8601 to the second (``2026-11-23T15:20:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_summary(path: Path) -> dict[str, Any] | None:
    """``summary.json`` as a dict, or None when it is missing, unreadable, not JSON or not an object.

    Nesting deeper than :data:`hookrun.common.files.MAX_JSON_DEPTH` counts as not JSON (no ``RecursionError``).
    """
    try:
        data = loads_json(read_regular_bytes(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass
class StatusRecord:
    """The status part of one training session's ``summary.json``.

    Attributes:
        path: the ``summary.json`` written.
        started: when the run first started (UTC, ISO 8601); a resume keeps the first session's.
        overrides: this session's ``--set`` overrides, as given.
        earlier_seconds: wall time of the earlier sessions of a resumed run (seconds).
        earlier: the summary the earlier session left (kept while this one runs).
        session_start: ``time.time()`` when this session's record was written (seconds).
        written: the session's final summary is written (``failed`` with its reason, say): a later
            exception must not replace it with :meth:`write_failed`'s shorter one.
    """

    path: Path
    started: str
    overrides: list[str]
    earlier_seconds: float = 0.0
    earlier: dict[str, Any] = field(default_factory=dict)
    session_start: float = field(default_factory=time.time)
    written: bool = False

    def fields(self, status: str) -> dict[str, Any]:
        """``status``, ``started``, ``ended`` (now), ``wall_seconds`` (every session's, summed) and ``overrides``."""
        return {
            "status": status,
            "started": self.started,
            "ended": utc_now(),
            "wall_seconds": round(self.earlier_seconds + time.time() - self.session_start, 3),
            "overrides": self.overrides,
        }

    def write_failed(self, error: BaseException, signal: int | None = None) -> None:
        """Record that training raised: ``failed`` with the error's first line (``interrupted`` after a signal).

        Never raises: a run directory that cannot be written must not hide the original error.
        """
        status = "interrupted" if signal is not None or isinstance(error, KeyboardInterrupt) else "failed"
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        data = {**self.earlier, **self.fields(status), "error": f"{type(error).__name__}: {first}"}
        with contextlib.suppress(Exception):
            atomic_write_text(self.path, json.dumps(data, indent=2) + "\n")


def begin_record(run_dir: Path, overrides: tuple[str, ...] | list[str], resumed: bool) -> StatusRecord:
    """Write ``summary.json`` with ``status: running`` as training starts, and return the record to finish.

    Args:
        run_dir: the run directory (locked by this process).
        overrides: this session's ``--set`` overrides.
        resumed: the run resumes from a checkpoint: the earlier summary's ``started``, ``wall_seconds``
            and values are kept.

    Returns:
        The record; its :meth:`StatusRecord.fields` go into the final ``summary.json``.
    """
    path = run_dir / SUMMARY_FILE
    earlier = (read_summary(path) or {}) if resumed else {}
    started = earlier.get("started") if isinstance(earlier.get("started"), str) else None
    seconds = earlier.get("wall_seconds")
    record = StatusRecord(
        path=path,
        started=started or utc_now(),
        overrides=list(overrides),
        earlier_seconds=float(seconds) if isinstance(seconds, (int, float)) and seconds >= 0 else 0.0,
        earlier=earlier,
    )
    data = {**earlier, **record.fields("running")}
    data.pop("ended", None)
    data.pop("error", None)
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    return record
