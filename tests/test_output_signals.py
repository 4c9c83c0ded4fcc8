"""Signals while ``hookrun predict`` or ``export`` writes: no partial output left, no old output lost.

SIGINT and SIGTERM become ``KeyboardInterrupt`` (:mod:`hookrun.cli.interrupts`), whose ``finally`` blocks remove the
temporary output; SIGHUP at its default action ended the process at once, leaving a hidden ``.<name>.*.tmp`` (a
``predict`` CSV's first 0.47 MB, an export's half-written SavedModel directory). A child process writes through
:func:`~hookrun.runner.trained.output.atomic_file` / ``atomic_directory`` and sends itself SIGHUP part way: no
TensorFlow, so this is fast.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

WRITER = """
import os, signal, sys, time
from pathlib import Path
from hookrun.runner.trained.output import atomic_directory, atomic_file

target = Path(sys.argv[1])
if sys.argv[2] == "file":
    with atomic_file(target) as temporary, open(temporary, "w") as handle:
        handle.write("row,y\\n0,1.5\\n")
        handle.flush()
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)
else:
    with atomic_directory(target) as directory:
        (directory / "variables").mkdir(parents=True)
        (directory / "saved_model.pb").write_bytes(b"partial")
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)
print("not ended by SIGHUP")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")
@pytest.mark.parametrize(("kind", "name"), [("file", "preds.csv"), ("directory", "model")])
def test_sighup_while_an_output_is_written_leaves_nothing_and_still_ends_the_process(
    tmp_path: Path, kind: str, name: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(out / name), kind],
        capture_output=True, text=True, timeout=60, cwd=REPO,
        # the child's SIGHUP at its default action, as under a terminal (not inherited as ignored)
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    assert done.returncode == -signal.SIGHUP, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == []  # neither the output nor its hidden temporary


def test_an_ignored_sighup_stays_ignored_and_the_output_is_written(tmp_path: Path) -> None:
    """``nohup hookrun predict ...``: SIGHUP is ignored before hookrun starts; it must stay so."""
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", WRITER.replace("time.sleep(5)", "pass"), str(out / "preds.csv"), "file"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "preds.csv").read_text() == "row,y\n0,1.5\n"


def test_ctrl_c_between_the_two_renames_of_export_overwrite_keeps_the_old_export(tmp_path: Path, monkeypatch) -> None:
    """``export --overwrite`` moves the old SavedModel aside, then the new one in. A Ctrl-C landing between the two
    renames (Python runs the handler between them) removed the holder, the old export in it: nothing was left at
    the path. The signal is made to land exactly there by raising it from the second rename."""
    from hookrun.runner.trained import output

    target = tmp_path / "model"
    target.mkdir()
    (target / "saved_model.pb").write_bytes(b"the old export")
    real_replace = os.replace

    def interrupted_second_rename(src, dst):
        if Path(src).name == "model" and Path(dst) == target:  # the new export moving in
            raise KeyboardInterrupt
        return real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", interrupted_second_rename)
    with pytest.raises(KeyboardInterrupt), output.atomic_directory(target) as directory:
        directory.mkdir()
        (directory / "saved_model.pb").write_bytes(b"the new export")
    monkeypatch.undo()
    assert (target / "saved_model.pb").read_bytes() == b"the old export"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # and no holder left beside it
