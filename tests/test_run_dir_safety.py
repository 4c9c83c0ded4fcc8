"""The run directory under attack: planted symlinks, lost or damaged files, moved and copied runs, bad
run-directory paths, a full disk, a hook calling ``sys.exit``. Real sessions, real files (issue 12)."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.hooks.history_saver.hook import read_history
from tests.conftest import base_config

cli = CliRunner(env={"COLUMNS": "200"})

#: Steps per epoch of the default data (64 rows, batch 8).
EPOCH = 8


def hooks(last_step: int, max_to_keep: int = 5) -> list[dict]:
    return [
        {"type": "stop_at_step", "last_step": last_step},
        {"type": "history_saver", "every_n_step": 4},
        {"type": "checkpoint_saver", "save_steps": EPOCH, "max_to_keep": max_to_keep},
    ]


def write_config(tmp_path: Path, last_step: int, name: str = "config.yaml", **kwargs) -> Path:
    path = tmp_path / name
    config = base_config(hooks=hooks(last_step, **kwargs))
    config["data"]["epochs"] = None  # repeat: the stop_at_step decides
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def train(config: Path, run_dir: Path, *extra: str):
    return cli.invoke(app, ["train", str(config), "--run-dir", str(run_dir), *extra])


def trained(tmp_path: Path, linear_csv: Path, run_dir: Path, last_step: int, **kwargs) -> Path:
    """Train ``run_dir`` up to ``last_step`` (a checkpoint every EPOCH steps); return its config."""
    config = write_config(tmp_path, last_step, f"config-{last_step}.yaml", **kwargs)
    result = train(config, run_dir)
    assert result.exit_code == 0, result.output
    return config


def restore_step(prefix: str) -> int:
    import tensorflow as tf

    return int(tf.train.load_variable(prefix, "global_step"))


def state_paths(run_dir: Path) -> list[str]:
    """Every path in ``run_dir``'s ``checkpoint`` state file, as written."""
    return re.findall(r'"([^"]*)"', (run_dir / "checkpoint").read_text())


def resumed_from(output: str) -> int:
    found = re.search(r"global step (\d+) →", output)
    assert found, output
    return int(found.group(1))


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    return lines[0]


# --- 1. symlinks planted in the run directory ---------------------------------------------------------


def test_a_symlinked_lock_file_or_trace_file_leaves_its_target_intact(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 4)  # a run (a directory that is none is refused: issue 23)
    victims = {}
    for name in (".hookrun.lock", "trace.jsonl", "history.csv"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious\n")
        (run_dir / name).unlink(missing_ok=True)
        (run_dir / name).symlink_to(victim)
        victims[name] = victim
    result = train(write_config(tmp_path, 8), run_dir, "--trace")
    assert result.exit_code == 0, result.output
    for victim in victims.values():
        assert victim.read_text() == "precious\n"
    assert not (run_dir / "trace.jsonl").is_symlink()  # a file of hookrun's own replaced the link


def run_directory(path: Path) -> Path:
    """``path`` made a hookrun run that holds no checkpoint yet (its first ``summary.json``), where a file can be
    planted: a directory that is no run is refused before anything else (issue 23)."""
    path.mkdir()
    (path / "summary.json").write_text('{"status": "running", "started": "2026-01-01T00:00:00Z"}\n')
    return path


def _event_config(tmp_path: Path, hooks_: list[dict]) -> Path:
    path = tmp_path / "events.yaml"
    config = base_config(hooks=[{"type": "stop_at_step", "last_step": 8}, *hooks_])
    config["data"].update({"epochs": None, "validation_split": 0.25})
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("hook", [
    {"type": "evaluation", "every_n_steps": 4, "log": False},  # its default output_dir: eval
    {"type": "summary_saver", "save_steps": 2, "output_dir": "tb/train"},
])
def test_a_symlinked_event_directory_is_refused_and_nothing_written_through_it(tmp_path, linear_csv, hook):
    run_dir = run_directory(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = run_dir / ("eval" if hook["type"] == "evaluation" else "tb")
    planted.symlink_to(elsewhere, target_is_directory=True)
    result = train(_event_config(tmp_path, [hook]), run_dir)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert f"{planted}: a symlink (to {elsewhere})" in line and f"hooks[1] ({hook['type']})" in line, line
    assert list(elsewhere.iterdir()) == []  # no event file (nor train/) made through the link
    assert not (run_dir / "config.yaml").exists()  # refused before anything was written


def test_a_symlinked_train_directory_is_refused_without_any_event_writer_hook(tmp_path, linear_csv):
    """RUN/train gets checkpoint_saver's graph even when no hook names it (issue 29)."""
    run_dir = run_directory(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_dir / "train").symlink_to(elsewhere, target_is_directory=True)
    result = train(_event_config(tmp_path, [{"type": "checkpoint_saver", "save_steps": 4}]), run_dir)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert f"{run_dir / 'train'}: a symlink (to {elsewhere})" in line and "the run's training events" in line, line
    assert list(elsewhere.iterdir()) == []
    assert not (run_dir / "config.yaml").exists()


def test_planted_event_file_names_are_refused_and_their_target_is_untouched(tmp_path, linear_csv):
    """TensorFlow names its event files events.out.tfevents.<seconds>.<hostname>: a name that can be planted."""
    import socket
    import time

    run_dir = run_directory(tmp_path / "run")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    now = int(time.time())
    for second in range(now, now + 120):  # the names the coming two minutes' writers would open
        (run_dir / f"events.out.tfevents.{second}.{socket.gethostname()}").symlink_to(victim)
    result = train(_event_config(tmp_path, [{"type": "summary_saver", "save_steps": 2}]), run_dir)
    assert victim.read_bytes() == b"precious\n"  # not truncated, no event written into it
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert "named as a TensorFlow event file" in line and "remove it" in line and str(victim) in line, line
    assert not (run_dir / "config.yaml").exists()


def test_event_directories_are_made_real_directories_before_training(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    hook = {"type": "summary_saver", "save_steps": 2, "output_dir": "tb/train"}
    result = train(_event_config(tmp_path, [hook, {"type": "evaluation", "every_n_steps": 4, "log": False}]), run_dir)
    assert result.exit_code == 0, result.output
    for sub in ("tb", "tb/train", "eval"):
        assert (run_dir / sub).is_dir() and not (run_dir / sub).is_symlink()
    assert list((run_dir / "tb" / "train").glob("events.out.tfevents.*")) and list(
        (run_dir / "eval").glob("events.out.tfevents.*"))


# --- 2. the lock outlives its file ---------------------------------------------------------------------


def test_deleting_the_lock_file_does_not_let_a_second_trainer_in(tmp_path, linear_csv):
    import time

    run_dir = tmp_path / "run"
    config = write_config(tmp_path, 10**9, "forever.yaml")
    first = subprocess.Popen(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(config), "--run-dir", str(run_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while not list(run_dir.glob("model.ckpt-*.index")):  # training, holding the lock
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        (run_dir / ".hookrun.lock").unlink()
        result = train(write_config(tmp_path, 8), run_dir)
        assert result.exit_code == 2, result.output
        line = one_error_line(result)
        assert f"run directory in use by process {first.pid}" in line
        assert first.poll() is None
    finally:
        first.kill()
        first.wait(timeout=30)


# --- 3. a lost `checkpoint` state file, or one naming missing files ------------------------------------


@pytest.mark.parametrize("loss", ["deleted", "garbage"])
def test_a_lost_state_file_resumes_from_the_checkpoint_files_and_overwrites_nothing(tmp_path, linear_csv, loss):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 24)
    if loss == "deleted":
        (run_dir / "checkpoint").unlink()
    else:
        (run_dir / "checkpoint").write_bytes(b"\x00\xffmodel_checkpoint_path: {{{")
    before = {p.name: p.stat().st_mtime_ns for p in run_dir.glob("model.ckpt-*")}
    result = train(write_config(tmp_path, 32), run_dir)
    assert result.exit_code == 0, result.output
    assert resumed_from(result.stdout) == 24
    assert "resuming from model.ckpt-24, found among the files" in result.stdout
    # No older checkpoint rewritten (the one resumed from is saved again at session start, as TensorFlow does).
    older = [p for p in before if not p.startswith("model.ckpt-24.")]
    assert older and {p: before[p] for p in older} == {p: (run_dir / p).stat().st_mtime_ns for p in older}
    assert state_paths(run_dir)[0] == "model.ckpt-32"  # rewritten, relative
    assert restore_step(str(run_dir / "model.ckpt-32")) == 32


def test_a_state_file_naming_missing_files_resumes_from_the_newest_that_exists(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 24)
    for path in run_dir.glob("model.ckpt-24.*"):
        path.unlink()
    result = train(write_config(tmp_path, 32), run_dir)
    assert result.exit_code == 0, result.output
    assert resumed_from(result.stdout) == 16
    assert "resuming from model.ckpt-16" in result.stdout


def test_the_state_files_choice_wins_over_a_newer_unrecorded_checkpoint(tmp_path, linear_csv):
    """A kill -9 between writing model.ckpt-24 and recording it: resume from what was recorded, as TensorFlow."""
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 24)
    state = run_dir / "checkpoint"
    recorded = 'model_checkpoint_path: "model.ckpt-16"'
    state.write_text(state.read_text().replace('model_checkpoint_path: "model.ckpt-24"', recorded))
    result = train(write_config(tmp_path, 32), run_dir)
    assert result.exit_code == 0, result.output
    assert resumed_from(result.stdout) == 16


# --- 4. moved and copied run directories --------------------------------------------------------------


def make_absolute(run_dir: Path) -> None:
    """Rewrite the state file with absolute paths, as hookrun wrote it before relative paths."""
    text = (run_dir / "checkpoint").read_text()
    (run_dir / "checkpoint").write_text(re.sub(r'"(?!/)([^"]*)"', lambda m: f'"{run_dir / m.group(1)}"', text))


def test_checkpoint_state_files_hold_relative_paths(tmp_path, linear_csv):
    config = base_config(
        hooks=[
            {"type": "stop_at_step", "last_step": 16},
            {"type": "evaluation", "every_n_steps": 8},
            {"type": "early_stopping", "monitor": "val_loss", "patience": 5, "keep_best": True},
            {"type": "checkpoint_saver", "save_steps": 8},
        ],
        data={"validation_split": 0.25, "epochs": None},
    )
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = train(path, tmp_path / "run")
    assert result.exit_code == 0, result.output
    for state in (tmp_path / "run" / "checkpoint", tmp_path / "run" / "best" / "checkpoint"):
        paths = re.findall(r'"([^"]*)"', state.read_text())
        assert paths and all("/" not in p for p in paths), state.read_text()


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute-as-older-hookrun"])
def test_a_moved_run_directory_resumes_from_its_checkpoint(tmp_path, linear_csv, absolute):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 24)
    if absolute:
        make_absolute(run_dir)
    moved = tmp_path / "moved"
    run_dir.rename(moved)
    result = train(write_config(tmp_path, 32), moved)
    assert result.exit_code == 0, result.output
    assert resumed_from(result.stdout) == 24
    assert f"checkpoint: {moved / 'model.ckpt-32'}" in result.stdout
    assert all("/" not in p for p in state_paths(moved))


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute-as-older-hookrun"])
def test_a_copied_run_directory_restores_from_its_own_files(tmp_path, linear_csv, absolute):
    original, copy = tmp_path / "original", tmp_path / "copy"
    trained(tmp_path, linear_csv, original, 24, max_to_keep=1)
    if absolute:
        make_absolute(original)
    subprocess.run(["cp", "-a", str(original), str(copy)], check=True)
    # The original goes on; keeping one checkpoint, it deletes its model.ckpt-24.
    assert train(write_config(tmp_path, 32, max_to_keep=1), original).exit_code == 0
    assert not (original / "model.ckpt-24.index").exists()
    result = train(write_config(tmp_path, 40, "c40.yaml", max_to_keep=1), copy)
    assert result.exit_code == 0, result.output
    assert resumed_from(result.stdout) == 24  # the copy's own model.ckpt-24
    assert f"checkpoint: {copy / 'model.ckpt-40'}" in result.stdout
    assert not (original / "model.ckpt-40.index").exists()  # nothing written into the original


# --- 10. damaged run-directory files ------------------------------------------------------------------


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def zero(path: Path) -> None:
    path.write_bytes(b"\0" * len(path.read_bytes()))


def garbage(path: Path) -> None:
    path.write_bytes(b"this is not an sstable" * 10)


@pytest.mark.parametrize(
    ("suffix", "damage"),
    [(".data-00000-of-00001", truncate), (".data-00000-of-00001", zero), (".index", garbage), (".index", zero)],
    ids=["truncated-data", "zeroed-data", "garbage-index", "zeroed-index"],
)
def test_a_damaged_latest_checkpoint_falls_back_to_the_newest_readable_one(tmp_path, linear_csv, suffix, damage):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 24)
    damage(run_dir / f"model.ckpt-24{suffix}")
    result = train(write_config(tmp_path, 32), run_dir)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert resumed_from(result.stdout) == 16
    assert re.search(r"checkpoint \S+model\.ckpt-24 is damaged \(.+\)", result.stdout), result.stdout
    assert restore_step(str(run_dir / "model.ckpt-32")) == 32


def test_every_checkpoint_damaged_is_refused_and_nothing_is_overwritten(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 8)
    for path in run_dir.glob("model.ckpt-*.index"):
        garbage(path)
    before = {p.name: p.read_bytes() for p in run_dir.glob("model.ckpt-*")}
    result = train(write_config(tmp_path, 16), run_dir)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert "no checkpoint in this run directory can be read" in line and "model.ckpt-8" in line
    assert {p.name: p.read_bytes() for p in run_dir.glob("model.ckpt-*")} == before


def test_a_damaged_history_line_is_skipped_with_its_line_number(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 16)
    path = run_dir / "history.csv"
    lines = path.read_bytes().splitlines(keepends=True)  # header, steps 4, 8, 12, 16
    lines[2:2] = [b"oops,not,numbers\n", b"\xff\xfe\x00garbage\n"]
    path.write_bytes(b"".join(lines))
    result = train(write_config(tmp_path, 24), run_dir)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert f"{path}:3: damaged history row skipped" in result.stdout
    assert f"{path}:4: damaged history row skipped" in result.stdout
    assert [row["step"] for row in read_history(path)] == [4, 8, 12, 16, 20, 24]


def test_read_history_reports_each_damaged_line(tmp_path):
    path = tmp_path / "history.csv"
    path.write_bytes(b"step,mean_loss,total_loss\n2,1.0,2.0\n3,x,1\n4,1.0\n\xff\n5,1.0,2.0\n")
    skipped: list[str] = []
    assert [row["step"] for row in read_history(path, skipped)] == [2, 5]
    assert [message.split(": ")[0] for message in skipped] == [f"{path}:{n}" for n in (3, 4, 5)]


def test_a_damaged_saved_config_is_one_line_naming_the_file(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 8)
    (run_dir / "config.yaml").write_text("name: [unclosed\n  graph: {{{\n")
    result = train(write_config(tmp_path, 16), run_dir)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert str(run_dir / "config.yaml") in line and "damaged" in line and "delete it" in line


def keep_best_config(tmp_path: Path) -> Path:
    config = base_config(
        hooks=[
            {"type": "stop_at_step", "last_step": 8},
            {"type": "evaluation", "every_n_steps": 8},
            {"type": "early_stopping", "monitor": "val_loss", "patience": 5, "keep_best": True},
        ],
        data={"validation_split": 0.25, "epochs": None},
    )
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_a_damaged_best_json_is_one_line_naming_the_file(tmp_path, linear_csv):
    path = keep_best_config(tmp_path)
    assert train(path, tmp_path / "run").exit_code == 0
    best = tmp_path / "run" / "best" / "best.json"
    best.write_text('{"step": 8, "monitor": "val_loss", "value": "oops"')
    result = train(path, tmp_path / "run")
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert str(best) in line and "delete it" in line


def test_a_symlinked_best_directory_is_refused_and_its_target_untouched(tmp_path, linear_csv):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "checkpoint").write_text("precious\n")
    run_dir = run_directory(tmp_path / "run")
    (run_dir / "best").symlink_to(victim)
    result = train(keep_best_config(tmp_path), run_dir)
    assert result.exit_code == 2, result.output
    assert "is a symlink" in one_error_line(result)
    assert [p.name for p in victim.iterdir()] == ["checkpoint"]
    assert (victim / "checkpoint").read_text() == "precious\n"


# --- 11. run-directory paths that cannot be used --------------------------------------------------------


def read_only_dir(tmp_path: Path) -> Path:
    path = tmp_path / "read-only"
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o500)
    elif subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("root without chattr +i: cannot make a read-only directory")
    return path


@pytest.mark.parametrize("kind", ["read-only", "symlink-loop", "proc-self", "long-name"])
def test_an_unusable_run_directory_is_a_usage_error(tmp_path, linear_csv, kind):
    if kind == "read-only":
        run_dir = read_only_dir(tmp_path)
    elif kind == "symlink-loop":
        run_dir = tmp_path / "loop"
        run_dir.symlink_to(tmp_path / "loop")
    elif kind == "proc-self":
        run_dir = Path("/proc/self")
    else:
        run_dir = tmp_path / ("x" * 300)
    try:
        result = train(write_config(tmp_path, 8), run_dir)
    finally:
        if kind == "read-only" and os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(run_dir)], check=False)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert line.startswith("error: ") and "--run-dir" in line


# --- 13. a full disk, and what a killed save leaves behind ----------------------------------------------


def limited_train(config: Path, run_dir: Path, max_bytes: int) -> subprocess.CompletedProcess[str]:
    """``hookrun train`` in a child process that may write no file beyond ``max_bytes`` (RLIMIT_FSIZE)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(config), "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=300, preexec_fn=limit,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.parametrize(
    ("max_kib", "resumed", "last_step"),
    # A new run writes graph.pbtxt (about 235 KB with the tf.data functions, the chunked shuffle's
    # scan among them) before its event file outgrows the limit: 300 KiB lets the graph through and
    # the event file (its graph plus a summary every step, ~2 KB a step) fail mid-run, after the first
    # checkpoints.
    [(30, True, 200), (140, True, 200), (300, False, 2000)],
    ids=["graph-too-large", "event-file-too-large", "event-file-too-large-new-run"],
)
def test_a_full_disk_is_one_line_and_keeps_the_last_good_checkpoint(tmp_path, linear_csv, max_kib, resumed,
                                                                     last_step):
    import tensorflow as tf

    run_dir = tmp_path / "run"
    if resumed:
        trained(tmp_path, linear_csv, run_dir, 8)
    config = write_config(tmp_path, last_step, "long.yaml")
    config.write_text(config.read_text().replace("hooks:\n", "hooks:\n- type: summary_saver\n  save_steps: 1\n"))
    done = limited_train(config, run_dir, max_kib * 1024)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert re.match(r"error: cannot write \S+: \[Errno 27\] File too large", lines[0]), lines[0]
    everything = done.stdout + done.stderr
    assert "Traceback" not in everything and "Exception in thread" not in everything
    assert "writer thread error" not in everything  # TensorFlow's log line of the same failure
    left = [p.name for p in run_dir.iterdir() if ".tmp" in p.name or "tempstate" in p.name]
    assert left == []
    latest = tf.train.latest_checkpoint(str(run_dir))
    assert latest is not None and restore_step(latest) >= (8 if resumed else 0)


def test_a_checkpoint_too_large_for_the_disk_leaves_the_one_it_would_replace_loadable(tmp_path, linear_csv):
    """The save at session start rewrites model.ckpt-8 (TensorFlow saves at the restored step): it fails."""
    run_dir = tmp_path / "run"
    graph = {"builder": "dnn_regressor", "params": {"hidden_units": [500, 500]}}
    for last_step, name in ((8, "c8.yaml"), (16, "c16.yaml")):
        config = base_config(hooks=hooks(last_step), graph=graph, data={"epochs": None})
        (tmp_path / name).write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert train(tmp_path / "c8.yaml", run_dir).exit_code == 0
    data = run_dir / "model.ckpt-8.data-00000-of-00001"
    assert data.stat().st_size > 900_000
    saved = data.read_bytes()
    done = limited_train(tmp_path / "c16.yaml", run_dir, 700_000)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write {data}: [Errno 27] File too large ("), lines
    assert data.read_bytes() == saved and restore_step(str(run_dir / "model.ckpt-8")) == 8
    assert [p.name for p in run_dir.iterdir() if "tempstate" in p.name or ".tmp" in p.name] == []


def test_leftovers_of_a_killed_save_are_removed_at_the_next_start(tmp_path, linear_csv):
    run_dir = tmp_path / "run"
    trained(tmp_path, linear_csv, run_dir, 8)
    # The names TensorFlow's writers use while a save is under way (BundleWriter; atomic file writes).
    leftovers = [
        "model.ckpt-16.data-00000-of-00001.tempstate8412765317046538181",
        "model.ckpt-16.index.tempstate8412765317046538181",
        "graph.pbtxt.tmp3e9b585344eb4b53befb200b73955268",
        "checkpoint.tmp0123456789abcdef0123456789abcdef",
    ]
    for name in leftovers:
        (run_dir / name).write_bytes(b"\0" * 10)
    keep = run_dir / "notes.tmp.txt"  # not a temporary name: left alone
    keep.write_text("mine")
    result = train(write_config(tmp_path, 16), run_dir)
    assert result.exit_code == 0, result.output
    assert [name for name in leftovers if (run_dir / name).exists()] == []
    assert keep.read_text() == "mine"


# --- a hook calling sys.exit ------------------------------------------------------------------------------

EXITING_HOOK = """
import sys

import tensorflow as tf


class ExitAtThree(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.calls = 0

    def after_run(self, run_context, run_values):
        self.calls += 1
        if self.calls == 3:
            sys.exit(0)
"""


def test_a_hook_calling_sys_exit_fails_the_run(tmp_path, linear_csv, write_module):
    module = write_module("exiting", EXITING_HOOK)
    config = base_config(
        hooks=[
            {"type": "custom", "class": f"{module}:ExitAtThree"},
            {"type": "checkpoint_saver", "save_steps": 100},
        ]
    )
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = train(path, tmp_path / "run")
    assert result.exit_code == 1, result.output
    line = one_error_line(result)
    assert "at step 3" in line and "ExitAtThree called sys.exit(0)" in line, line

