"""``hookrun runs``: the comparison table, from real runs' files (issue 15 f)."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.common.errors import TrainingError
from hookrun.common.numbers import format_number
from hookrun.runner.config import load_config
from hookrun.runner.trained.runs import list_runs
from tests.conftest import NAN_BUILDER, Captured, base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "250"})

HOOKS = [
    {"type": "stop_at_step", "num_steps": 12},
    {"type": "evaluation", "every_n_steps": 4, "log": False},
    {"type": "history_saver", "every_n_step": 4},
    {"type": "checkpoint_saver", "save_steps": 12},
]


def _config(tmp_path, hooks=HOOKS, graph=None, name="config.yaml"):
    (tmp_path / "data").mkdir(exist_ok=True)
    write_csv(tmp_path / "data" / "train.csv", linear_rows(48, seed=1))
    write_csv(tmp_path / "data" / "val.csv", linear_rows(16, seed=2))
    config = base_config(
        hooks=hooks, data={"train": "data/train.csv", "validation": "data/val.csv", "epochs": None},
        graph=graph or {},
    )
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _history(run_dir, column):
    with (run_dir / "history.csv").open(newline="") as handle:
        return [(int(r["step"]), float(r[column])) for r in csv.DictReader(handle) if r[column]]


def _best_val_loss(run_dir):
    return min(v for _, v in _history(run_dir, "val_loss"))


#: The tests using ``runs`` only read it: it is built once per module, and they run on one pytest-xdist worker.
SHARED_RUNS = pytest.mark.xdist_group("test_runs_shared_runs")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``<tmp>/runs``: two finished runs (other learning rates), a failed one, a damaged and a foreign directory.

    Module-scoped (four trainings once, not per test): the tests using it must not change it.
    """
    from hookrun.runner.trainer import train

    tmp_path = tmp_path_factory.mktemp("shared_runs")
    console = Captured().console

    def run_train(loaded, run_dir):
        return train(loaded, run_dir=run_dir, console=console)

    config = _config(tmp_path)
    root = tmp_path / "runs"
    for rate in ("0.05", "0.001"):
        overrides = [f"graph.optimizer.learning_rate={rate}", "data.batch_size=8"]
        run_train(load_config(config, overrides), run_dir=root / f"lr-{rate}")
    module = f"nan_builder_{uuid.uuid4().hex[:8]}"  # as the write_module fixture: unique, removed afterwards
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(NAN_BUILDER), encoding="utf-8")
    try:
        failing = _config(
            tmp_path, hooks=[*HOOKS, {"type": "nan_tensor"}],
            graph={"builder": f"{module}:build", "params": {"nan_from": 5}}, name="nan.yaml",
        )
        with pytest.raises(TrainingError):
            run_train(load_config(failing, ["data.batch_size=8"]), run_dir=root / "nan")
    finally:
        sys.modules.pop(module, None)
    (root / "broken").mkdir()
    (root / "broken" / "config.yaml").write_text("name: x\n")
    (root / "broken" / "summary.json").write_text('{"status": "fini')  # torn
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a run")
    return root


@SHARED_RUNS
def test_the_table_shows_status_steps_metrics_and_the_overrides_that_differ(runs):
    table = list_runs(runs)
    by_name = {row.name: row for row in table.runs}
    assert set(by_name) == {"lr-0.05", "lr-0.001", "nan", "broken"}
    assert table.skipped == ["notes: not a run directory (no config.yaml, summary.json or checkpoint)"]

    fast = by_name["lr-0.05"]
    assert (fast.status, fast.steps) == ("finished", 12)
    assert fast.started and fast.wall_seconds and fast.wall_seconds > 0
    val = _history(runs / "lr-0.05", "val_loss")
    assert [s for s, _ in val] == [4, 8, 12]
    assert fast.metrics["val_loss"].final == pytest.approx(val[-1][1], rel=1e-5)
    best_step, best = min(val, key=lambda sv: sv[1])
    assert fast.metrics["val_loss"].best == pytest.approx(best, rel=1e-5)
    assert fast.metrics["val_loss"].best_step == best_step
    assert fast.metrics["val_rmse"].mode == "min"
    # data.batch_size=8 is shared by every readable run: only the learning rate tells them apart
    assert fast.distinguishing == ["graph.optimizer.learning_rate=0.05"]
    assert fast.overrides == ["graph.optimizer.learning_rate=0.05", "data.batch_size=8"]

    failed = by_name["nan"]
    assert failed.status == "failed" and "NaN" in (failed.error or ""), failed
    assert failed.distinguishing == []
    broken = by_name["broken"]
    assert broken.status == "unreadable" and broken.notes == ["summary.json damaged"]

    ordered = [row.name for row in list_runs(runs, sort="val_loss").runs]
    lows = {n: _best_val_loss(runs / n) for n in ("lr-0.05", "lr-0.001", "nan")}  # nan evaluated at step 4
    assert ordered == [*sorted(lows, key=lows.get), "broken"]  # lowest first; without the metric last


@SHARED_RUNS
def test_the_cli_prints_the_table_and_json_and_refuses_an_unknown_sort(runs):
    result = cli.invoke(app, ["runs", str(runs), "--sort", "val_rmse"])
    assert result.exit_code == 0, result.output
    for text in ("lr-0.05", "lr-0.001", "finished", "failed", "unreadable", "val_rmse", "learning_rate=0.05",
                 "note: skipped notes: not a run directory", "note: broken: summary.json damaged"):
        assert text in result.output, text
    assert "Traceback" not in result.output

    data = json.loads(cli.invoke(app, ["runs", str(runs), "--json", "--sort", "steps"]).output)
    assert data["sort"] == "steps" and data["metrics"][0] == "val_loss"
    assert {r["name"]: r["status"] for r in data["runs"]}["nan"] == "failed"

    bad = cli.invoke(app, ["runs", str(runs), "--sort", "val_rmes"])
    assert bad.exit_code == 2 and "did you mean `val_rmse`" in bad.output, bad.output
    missing = cli.invoke(app, ["runs", str(runs / "nope")])
    assert missing.exit_code == 2 and "no such directory" in missing.output


def _hookrun(*args):
    return [sys.executable, "-m", "hookrun.cli.app", *args]


@pytest.mark.slow  # two real `hookrun train` processes, SIGINT and kill
def test_a_live_run_is_running_then_interrupted_and_a_killed_one_failed(tmp_path):
    hooks = [
        {"type": "stop_at_step", "num_steps": 10_000_000},
        {"type": "history_saver", "every_n_step": 50},
        {"type": "checkpoint_saver", "save_steps": 400},
    ]
    config = _config(tmp_path, hooks=hooks)
    run_dir = tmp_path / "runs" / "long"

    def lines():
        return len((run_dir / "history.csv").read_text().splitlines()) if (run_dir / "history.csv").exists() else 0

    def start():
        before = lines()
        proc = subprocess.Popen(_hookrun("train", str(config), "--run-dir", str(run_dir)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if lines() > before + 2:  # this session is training
                return proc
            time.sleep(0.1)
        proc.kill()
        raise AssertionError(f"training did not start: {proc.communicate()}")

    proc = start()
    try:
        (row,) = list_runs(tmp_path / "runs").runs
        assert row.status == "running", row
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    stopped = int(stderr.split("interrupted at step ")[1].split(",")[0])
    (row,) = list_runs(tmp_path / "runs").runs
    assert (row.status, row.steps) == ("interrupted", stopped)
    first_wall = row.wall_seconds

    proc = start()  # a resume, killed outright: its summary still says running, but no process holds the lock
    proc.kill()
    proc.communicate(timeout=60)
    (row,) = list_runs(tmp_path / "runs").runs
    assert row.status == "failed" and "killed" in row.error, row
    assert row.wall_seconds >= first_wall  # the earlier session's time is kept


def test_hostile_files_are_notes_never_errors(tmp_path):
    import os

    root = tmp_path / "runs"
    odd = root / "odd"
    odd.mkdir(parents=True)
    (odd / "config.yaml").write_text(
        "name: odd\nhooks:\n- {type: early_stopping, monitor: val_accuracy, mode: max}\n- {type: history_saver}\n"
    )
    (odd / "summary.json").write_text(json.dumps({
        "status": "finished", "started": 5, "final_global_step": "many", "wall_seconds": "slow",
        "overrides": [1, "a=b"], "validation": {"step": 30, "val_accuracy": 0.5, "val_loss": "x"},
    }))
    (odd / "history.csv").write_text(
        "step,mean_loss,total_loss,val_loss,val_accuracy\n10,1,1,0.9,0.7\nbroken line\n20,1,1,nan,0.6\n"
    )
    (odd / "eval-40.json").write_text(json.dumps({"data": ["/x/test.csv"], "metrics": {"val_accuracy": 0.99}}))
    (odd / "eval-50.json").write_text(json.dumps({"data": ["validation"], "metrics": {"val_accuracy": 0.4}}))
    (odd / "eval-60.json").write_text("[1, 2")
    (odd / "model.ckpt-50.index").write_bytes(b"")
    fifo = root / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "summary.json")  # reading it would block forever
    os.mkfifo(fifo / "history.csv")

    table = list_runs(root)
    rows = {row.name: row for row in table.runs}
    row = rows["odd"]
    assert (row.status, row.steps, row.wall_seconds, row.overrides) == ("finished", 50, None, ["1", "a=b"])
    accuracy = row.metrics["val_accuracy"]  # mode max from early_stopping; --data evaluations left out
    assert (accuracy.mode, accuracy.final, accuracy.best, accuracy.best_step) == ("max", 0.4, 0.7, 10)
    assert (row.metrics["val_loss"].final, row.metrics["val_loss"].best_step) == (0.9, 10)  # NaN is no value
    assert row.notes == ["history.csv: 1 damaged line(s) skipped", "eval-60.json unreadable (Expecting ',' delimiter: "
                         "line 1 column 6 (char 5))"]
    assert "fifo" not in rows and table.skipped == [  # a FIFO is no file: never opened, never blocks
        "fifo: not a run directory (no config.yaml, summary.json or checkpoint)"
    ]
    (fifo / "config.yaml").write_text("name: fifo\n")  # now a run directory, its summary and history FIFOs
    row = {r.name: r for r in list_runs(root).runs}["fifo"]
    assert row.status == "unreadable" and row.notes[0] == "summary.json damaged", row
    result = cli.invoke(app, ["runs", str(root)])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert cli.invoke(app, ["runs", str(odd / "config.yaml")]).exit_code == 2  # a file: no such directory


def _summary_only_run(path, **summary):
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("name: r\n")
    (path / "summary.json").write_text(json.dumps({"status": "finished", "final_global_step": 4, **summary}))


def test_a_symlink_back_up_or_to_a_listed_run_is_listed_once(tmp_path):
    """``runs/loop -> ..`` listed every run twice (``loop/a``); ``runs/latest -> a`` listed ``a`` twice."""
    root = tmp_path / "runs"
    _summary_only_run(root / "a")
    _summary_only_run(root / "b")
    (root / "loop").symlink_to(root)
    (root / "up").symlink_to(tmp_path)
    (root / "latest").symlink_to(root / "a")
    table = list_runs(root)
    assert [row.name for row in table.runs] == ["a", "b"]
    assert table.skipped == [
        f"loop: a symlink to {root.resolve()}, which holds this directory",
        f"up: a symlink to {tmp_path.resolve()}, which holds this directory",
        "latest: the same run directory as a",
    ]
    result = cli.invoke(app, ["runs", str(root)])
    assert result.exit_code == 0 and "loop/a" not in result.output and "latest" in result.output, result.output


def test_an_unknown_status_is_unreadable_not_finished(tmp_path):
    """``"status": 5`` (a hand edit) showed as ``finished``."""
    _summary_only_run(tmp_path / "runs" / "odd", status=5)
    (row,) = list_runs(tmp_path / "runs").runs
    assert row.status == "unreadable" and row.notes[0] == "summary.json: unknown status 5", row


def test_thousands_of_other_entries_are_one_counted_note(tmp_path):
    """A directory of 500 non-run directories printed 500 notes under the table."""
    root = tmp_path / "many"
    _summary_only_run(root / "a")
    for i in range(500):
        (root / f"x{i:03d}").mkdir()
    result = cli.invoke(app, ["runs", str(root)])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("note: skipped")]
    assert len(notes) == 21 and notes[-1] == "note: skipped 480 more (--json lists them all)", notes[-3:]
    listed = json.loads(cli.invoke(app, ["runs", str(root), "--json"]).output)
    assert len(listed["skipped"]) == 500


def _wide_table(sort):
    """Runs named as a sweep names them, with long values, five metrics and two overrides each."""
    from hookrun.runner.trained.runs import MetricValues, RunRow, RunsTable

    names = ["sweep/learning_rate=0.001,batch_size=64", "lr-0.05", "baseline-long-name-run", "x"]
    statuses = ["finished", "interrupted", "failed", "unreadable"]
    metrics = ["val_loss", "val_mae", "val_r2", "val_rmse", "val_accuracy"]
    rows = []
    for i, (name, status) in enumerate(zip(names, statuses, strict=True)):
        values = {m: MetricValues(0.123456789 * (i + j + 1), -0.0987654e-5 * (i + 1), 12000 * (i + 1) + j, "min")
                  for j, m in enumerate(metrics)}
        overrides = [f"graph.optimizer.learning_rate=0.00{i + 1}", f"data.batch_size={2 ** (i + 4)}"]
        rows.append(RunRow(
            name=name, path=f"/r/{name}", status=status, started=f"2026-11-23T17:1{i}:05+00:00",
            steps=123456 * (i + 1), wall_seconds=3456.7 * (i + 1), metrics=values, overrides=overrides,
            distinguishing=overrides,
        ))
    return RunsTable(root="/work/a/long/path/to/the/runs", runs=rows, metrics=metrics, sort=sort)


def _row_blocks(text, statuses):
    """The table's body lines, one list per run: a run starts at the line holding its status."""
    lines = text.splitlines()
    body = lines[next(i for i, line in enumerate(lines) if line and set(line) == {"─"}) + 1:]
    blocks = []
    for line in body:
        if "val_*:" in line or line.startswith("note:") or not line.strip():
            break
        if set(line.split()) & statuses:
            blocks.append([])
        blocks[-1].append(line)
    return blocks


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("sort", ["val_rmse", None, "steps"])
def test_the_table_fits_the_width_with_each_run_s_name_status_and_sort_metric_whole(width, sort):
    from rich.console import Console

    from hookrun.cli.commands.runs import render_runs

    table = _wide_table(sort)
    console = Console(width=width, record=True, color_system=None)
    render_runs(console, table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width and "…" not in text
    key = sort or "val_loss"  # without --sort (by start time) the first metric is the one to compare
    header = next(line for line in text.splitlines() if line.startswith("run "))
    assert f" {key}" in header and " status" in header, header
    blocks = _row_blocks(text, {row.status for row in table.runs})
    assert len(blocks) == len(table.runs), text
    for row, block in zip(table.runs, blocks, strict=True):
        # the name may fold within its column, never lose a character
        assert "".join(line.split()[0] for line in block if not line.startswith(" ")) == row.name, block
        assert row.status in block[0].split(), block
        if key == "steps":
            assert f"{row.steps:,}" in block[0].split(), block
        else:  # `final /` and `best@step` each whole (the cell may wrap at its " / ")
            value = row.metrics[key]
            assert any(f" {format_number(value.final)} /" in line for line in block), (value, block)
            best = f"{format_number(value.best)}@{value.best_step}"
            assert any(best in line.split() for line in block), (value, block)
    if width >= 120:  # that terminal shows more than the three columns that always are
        assert len(header.split()) > 4, header
    # every column either heads the table or is named as left out
    note = " ".join(" ".join(text.split("note: not shown", 1)[1:]).split())
    for name in ["started (UTC)", "steps", "wall", "--set that differs", *table.metrics]:
        assert name in note or f" {name.split()[0]}" in header, (name, text)


@SHARED_RUNS
def test_the_cli_table_at_80_columns_shows_every_real_run_whole(runs):
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["runs", str(runs), "--sort", "val_rmse"])
    assert result.exit_code == 0, result.output
    lines = result.output.split("\nnote: ")[0].splitlines()  # the table (notes are soft-wrapped lines)
    assert max(len(line) for line in lines) <= 80, result.output
    for row in list_runs(runs).runs:
        line = next(line for line in lines if line.startswith(row.name + " "))
        assert row.status in line
        if "val_rmse" in row.metrics:
            rmse = row.metrics["val_rmse"]
            assert f"{format_number(rmse.final)} / {format_number(rmse.best)}@{rmse.best_step}" in line, line


def test_a_non_finite_value_is_never_the_best(tmp_path):
    """``-inf`` (an overflow) showed as the best ``val_loss`` and sorted first."""
    root = tmp_path / "runs"
    _summary_only_run(root / "diverged")
    (root / "diverged" / "history.csv").write_text("step,val_loss,val_auc\n10,0.5,0.7\n20,-inf,inf\n30,0.4,0.6\n")
    _summary_only_run(root / "steady")
    (root / "steady" / "history.csv").write_text("step,val_loss\n10,0.3\n")
    _summary_only_run(root / "overflowed")
    (root / "overflowed" / "history.csv").write_text("step,val_loss\n10,inf\n")
    table = list_runs(root, sort="val_loss")
    rows = {row.name: row for row in table.runs}
    loss, auc = rows["diverged"].metrics["val_loss"], rows["diverged"].metrics["val_auc"]
    assert (loss.final, loss.best, loss.best_step) == (0.4, 0.4, 30)
    assert (auc.best, auc.best_step) == (0.7, 10)  # +inf is no best of a max metric either
    over = rows["overflowed"].metrics["val_loss"]
    assert (over.final, over.best, over.best_step) == (float("inf"), None, None)
    assert [row.name for row in table.runs] == ["steady", "diverged", "overflowed"]  # no best value: last
    result = cli.invoke(app, ["runs", str(root), "--sort", "val_loss"])
    assert result.exit_code == 0, result.output
    assert "-inf" not in result.output and "inf / -" in result.output, result.output


def test_a_symlink_that_sorts_first_does_not_hide_the_real_run(tmp_path):
    """``latest -> ok1`` listed ``latest`` and skipped the real ``ok1`` as its alias."""
    root = tmp_path / "runs"
    _summary_only_run(root / "ok1")
    (root / "latest").symlink_to("ok1")
    _summary_only_run(root / "sweep" / "b")
    (root / "sweep" / "a-latest").symlink_to("b")
    only = tmp_path / "elsewhere"
    _summary_only_run(only)
    (root / "link").symlink_to(only)  # the only way to it: listed by the link's name
    table = list_runs(root)
    assert sorted(row.name for row in table.runs) == ["link", "ok1", "sweep/b"]
    assert sorted(table.skipped) == ["latest: the same run directory as ok1",
                                     "sweep/a-latest: the same run directory as sweep/b"]


def test_control_characters_in_names_and_overrides_are_escaped(tmp_path):
    """``ESC[2J`` in a run's name or ``--set`` cleared the screen; a newline in a name split its row."""
    root = tmp_path / "runs"
    _summary_only_run(root / "evil\x1b[2J\nname", overrides=["data.label=\x1b]0;owned\x07", "x=\u202egnp.exe"])
    _summary_only_run(root / "plain", overrides=["x=1"], started="2026-\x1b[2J[bold]x\x07")
    (root / "evil\x1b[2J\nname" / "history.csv").write_text("step,val_\x1b[31mred\n10,0.5\n")
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["runs", str(root)])
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in "\x1b\x07\u202e"), repr(result.output)
    row = next(line for line in result.output.splitlines() if line.startswith("evil"))
    assert row.startswith("evil\\x1b[2J\\nname ") and "label=\\x1b]0;owned\\x07" in row, repr(row)
    assert "val_\\x1b[31mred" in result.output
    plain = next(line for line in result.output.splitlines() if line.startswith("plain"))
    assert "\\x1b[2J[bold]x" in plain, repr(plain)  # a hand-edited `started`: escaped, not rich markup
    listed = json.loads(cli.invoke(app, ["runs", str(root), "--json"]).output)  # JSON escapes them itself
    assert {r["name"] for r in listed["runs"]} == {"evil\x1b[2J\nname", "plain"}


def test_deeply_nested_json_marks_that_run_unreadable_and_the_table_is_printed(tmp_path):
    """A 100,000-deep ``summary.json`` ended ``runs`` with "internal error: RecursionError" and no table."""
    root = tmp_path / "runs"
    _summary_only_run(root / "ok")
    deep = root / "deep"
    deep.mkdir()
    (deep / "config.yaml").write_text("name: d\n")
    (deep / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    _summary_only_run(root / "evals")
    (root / "evals" / "eval-5.json").write_text('{"data": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (root / "evals" / "config.yaml").write_text("hooks: " + "[" * 5_000 + "]" * 5_000 + "\n")
    rows = {row.name: row for row in list_runs(root).runs}
    assert rows["deep"].status == "unreadable" and rows["deep"].notes == ["summary.json damaged"]
    assert rows["evals"].status == "finished"
    assert rows["evals"].notes == ["config.yaml unreadable (nested too deeply)",
                                   "eval-5.json unreadable (nested deeper than 64 levels)"], rows["evals"].notes
    result = cli.invoke(app, ["runs", str(root)])
    assert result.exit_code == 0 and "internal error" not in result.output, result.output
    assert "deep" in result.output and "unreadable" in result.output


def test_deeply_nested_run_files_are_one_line_errors(tmp_path):
    """``best.json``, ``preprocessing.json`` and ``hook_state-N.json`` nested 100,000 deep: RecursionError."""
    from hookrun.common.errors import SetupError
    from hookrun.config_schemas.data import DataConfig
    from hookrun.hooks.early_stopping.hook import read_best
    from hookrun.runner.data.preprocessing import Preprocessor

    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "best.json").write_text(deep)
    with pytest.raises(SetupError, match="best.json: damaged .*nested deeper than 64 levels"):
        read_best(tmp_path / "best.json")
    (tmp_path / "preprocessing.json").write_text('{"columns": ' + deep + "}")
    with pytest.raises(SetupError, match="preprocessing.json"):
        Preprocessor.load(tmp_path / "preprocessing.json", DataConfig(train="d.csv", label="y"))


def test_numbers_too_large_for_a_float_are_infinite_not_an_internal_error(tmp_path):
    """A 400-digit ``val_loss`` or ``wall_seconds`` in summary.json or an eval file: "internal error: OverflowError"."""
    root = tmp_path / "runs"
    huge = "9" * 400
    (root / "big").mkdir(parents=True)
    (root / "big" / "config.yaml").write_text("name: big\n")
    (root / "big" / "summary.json").write_text(
        '{"status": "finished", "final_global_step": 4, "wall_seconds": ' + huge
        + ', "validation": {"step": 4, "val_loss": -' + huge + "}}"
    )
    _summary_only_run(root / "evals")
    (root / "evals" / "eval-4.json").write_text('{"data": ["validation"], "metrics": {"val_loss": ' + huge + "}}")
    rows = {row.name: row for row in list_runs(root).runs}
    assert rows["big"].wall_seconds is None and rows["big"].metrics["val_loss"].final == float("-inf")
    assert rows["evals"].metrics["val_loss"].final == float("inf") and rows["evals"].metrics["val_loss"].best is None
    result = cli.invoke(app, ["runs", str(root)])
    assert result.exit_code == 0 and "internal error" not in result.output, result.output
