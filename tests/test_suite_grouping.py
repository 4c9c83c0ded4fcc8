"""`make test`'s `--dist loadgroup` keeps each `xdist_group` on one pytest-xdist worker.

The shared module-scoped fixtures (tests/test_bad_configs.py's driver, the trained runs of test_trained_attacks.py
and test_input_fn_trained.py, test_packaging.py's wheel) are built once only when their group runs on one worker;
pytest 9.2 with pytest-xdist 3.8 silently spread every group over the workers (pytest-dev/pytest-xdist#1386), so
each was built on each worker, more than once when a worker switched modules. This runs a tiny suite in a fresh
pytest (no TensorFlow) the way `make test` runs the real one.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SUITE = """
import os
from pathlib import Path

import pytest

OUT = Path(__file__).with_name("workers")


def _record(name):
    OUT.mkdir(exist_ok=True)
    (OUT / name).write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    _record(f"grouped-{i}")


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    _record(f"free-{i}")
"""


def test_an_xdist_group_runs_on_one_worker_under_make_tests_options(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # its own rootdir and options
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider",
         "test_tiny.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = {path.name: path.read_text() for path in (tmp_path / "workers").iterdir()}
    assert len(workers) == 16
    assert set(workers.values()) == {"gw0", "gw1"}, workers  # both workers ran tests: the check below can fail
    grouped = {worker for name, worker in workers.items() if name.startswith("grouped-")}
    assert len(grouped) == 1, f"the xdist_group ran on {sorted(grouped)} (pytest-dev/pytest-xdist#1386): {workers}"
