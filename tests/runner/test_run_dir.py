"""Tests of the run directory: atomic writes, writability, the lock between processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hookrun.common.errors import SetupError
from hookrun.runner.run_dir.directory import LOCK_FILE, RunDirLock, atomic_write_text, prepare_run_dir

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hookrun.runner.run_dir.directory import RunDirLock
    with RunDirLock(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(60)
    """
)


def _holder(run_dir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_second_holder_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(SetupError, match=f"in use by process {proc.pid}") as info:
            with RunDirLock(tmp_path):
                pass
        assert info.value.exit_code == 2
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_lock_of_a_killed_process_is_not_stale(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    proc.kill()  # SIGKILL: no cleanup runs, the lock file stays behind
    proc.wait(timeout=10)
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(proc.pid)
    with RunDirLock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())


def test_lock_is_released_on_exit(tmp_path: Path) -> None:
    with RunDirLock(tmp_path):
        pass
    with RunDirLock(tmp_path):  # would raise if the first were still held
        pass


def test_second_train_on_the_same_run_dir_exits_2_before_importing_tensorflow(make_config, tmp_path: Path) -> None:
    loaded = make_config()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = _holder(run_dir)
    try:
        started = time.perf_counter()
        code = (
            "import sys\nfrom hookrun.cli.app import app\n"
            f"try:\n    app(['train', {str(loaded.path)!r}, '--run-dir', {str(run_dir)!r}])\n"
            "except SystemExit as e:\n    print('tf' if 'tensorflow' in sys.modules else 'no-tf'); raise\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert f"run directory in use by process {proc.pid}" in done.stderr
        assert done.stdout.strip() == "no-tf"
        assert "Traceback" not in done.stderr
        assert time.perf_counter() - started < 30
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    atomic_write_text(target, "old\n")
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]  # no temporary left behind


def test_unwritable_run_dir_is_a_setup_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        with pytest.raises(SetupError, match="exists but is a file"):
            prepare_run_dir(blocker)
        with pytest.raises(SetupError, match="Not a directory"):
            prepare_run_dir(blocker / "sub")  # a path through a file cannot be created, even as root
    else:
        locked = tmp_path / "ro"
        locked.mkdir()
        locked.chmod(0o500)
        with pytest.raises(SetupError, match="not writable"):
            prepare_run_dir(locked / "run")


def test_a_symlinked_lock_file_never_touches_its_target(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run_dir / LOCK_FILE).symlink_to(victim)
    with RunDirLock(run_dir):
        assert victim.read_text() == "precious\n"  # not written through the link while held
    assert victim.read_text() == "precious\n"  # nor truncated on release


def test_a_hard_linked_lock_file_never_touches_the_other_name(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.link(victim, run_dir / LOCK_FILE)
    with RunDirLock(run_dir):
        pass
    assert victim.read_text() == "precious\n"


def test_deleting_the_lock_file_does_not_release_the_lock(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        (tmp_path / LOCK_FILE).unlink()
        with pytest.raises(SetupError, match="in use by process") as info:
            with RunDirLock(tmp_path):
                pass
        assert info.value.exit_code == 2
        assert str(proc.pid) in str(info.value)  # found without the file
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_clean_temporary_files_removes_only_what_writers_left_half_written(tmp_path: Path) -> None:
    from hookrun.runner.run_dir.directory import clean_temporary_files

    left = [
        "model.ckpt-16.data-00000-of-00001.tempstate8412765317046538181",
        "graph.pbtxt.tmp3e9b585344eb4b53befb200b73955268",
        ".history.csv.fayxbvi_.tmp",
        "best/checkpoint.tmp0123456789abcdef0123456789abcdef",
    ]
    kept = ["notes.tmp.txt", ".mine.tmp", "model.ckpt-16.index", "history.csv", "best/best.json"]
    (tmp_path / "best").mkdir()
    for name in left + kept:
        (tmp_path / name).write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "graph.pbtxt.tmp3e9b585344eb4b53befb200b73955268").write_text("theirs")
    (tmp_path / "linked").symlink_to(outside)  # a symlinked folder is not entered
    assert clean_temporary_files(tmp_path) == sorted(left)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(kept)
    assert (outside / "graph.pbtxt.tmp3e9b585344eb4b53befb200b73955268").read_text() == "theirs"
