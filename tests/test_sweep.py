"""``hookrun train CONFIG --sweep PATH=V1,V2``: one run per combination, then the table (issue 15 f)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.runner.trained.sweep import SweepAxis, parse_sweep, run_name, split_values
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "250"})


def _config(tmp_path, hooks=None):
    write_csv(tmp_path / "data.csv", linear_rows(32, seed=1))
    config = base_config(hooks=hooks or [{"type": "stop_at_step", "num_steps": 4}])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_a_2x2_sweep_makes_four_runs_with_their_values(tmp_path):
    config = _config(tmp_path)
    base = tmp_path / "sweep"
    result = cli.invoke(app, [
        "train", str(config), "--run-dir", str(base), "--set", "data.epochs=3",
        "--sweep", "graph.optimizer.learning_rate=0.01,0.1", "--sweep", "data.batch_size=4,8",
    ])
    assert result.exit_code == 0, result.output
    dirs = sorted(p.name for p in base.iterdir())
    assert dirs == sorted(f"learning_rate={lr},batch_size={bs}" for lr in ("0.01", "0.1") for bs in (4, 8))
    for lr in (0.01, 0.1):
        for bs in (4, 8):
            run = base / f"learning_rate={lr},batch_size={bs}"
            saved = yaml.safe_load((run / "config.yaml").read_text())
            assert saved["graph"]["optimizer"]["learning_rate"] == lr
            assert (saved["data"]["batch_size"], saved["data"]["epochs"]) == (bs, 3)
            summary = json.loads((run / "summary.json").read_text())
            assert summary["status"] == "finished" and summary["final_global_step"] == 4
            assert summary["overrides"] == ["data.epochs=3", f"graph.optimizer.learning_rate={lr}",
                                            f"data.batch_size={bs}"]
    assert "sweep: 4 runs in" in result.output and "run 4/4: learning_rate=0.1,batch_size=8" in result.output
    table = result.output[result.output.rindex("runs in"):]
    assert table.count("finished") == 4 and "data.epochs=3" not in table  # shared by all: not what differs


def test_a_bad_value_fails_before_any_training(tmp_path):
    config = _config(tmp_path)
    base = tmp_path / "sweep"
    result = cli.invoke(app, [
        "train", str(config), "--run-dir", str(base),
        "--sweep", "graph.optimizer.learning_rate=0.01,-1", "--sweep", "data.batch_size=4,four",
    ])
    assert result.exit_code == 2, result.output
    assert "--sweep: error: graph.optimizer.learning_rate: `graph.optimizer.learning_rate=-1`: must be greater" in (
        result.output)
    assert "`data.batch_size=four`: must be an integer" in result.output
    assert result.output.count("data.batch_size=four") == 1  # each issue once, not once per combination
    assert not base.exists()  # nothing trained, nothing written


def test_a_failed_run_does_not_stop_the_others_and_the_exit_code_is_1(tmp_path):
    config = _config(tmp_path, hooks=[{"type": "stop_at_step", "num_steps": 30}, {"type": "nan_tensor"}])
    base = tmp_path / "sweep"
    result = cli.invoke(app, [
        "train", str(config), "--run-dir", str(base), "--sweep", "graph.optimizer.learning_rate=1e6,0.01",
    ])
    assert result.exit_code == 1, result.output
    diverged = json.loads((base / "learning_rate=1e6" / "summary.json").read_text())
    assert diverged["status"] == "failed" and "NaN" in diverged["error"]
    assert json.loads((base / "learning_rate=0.01" / "summary.json").read_text())["status"] == "finished"
    assert "1 of 2 runs failed: learning_rate=1e6" in result.output


@pytest.mark.slow  # a real `hookrun train --sweep`, then SIGINT
def test_ctrl_c_stops_the_current_run_gracefully_and_starts_no_other(tmp_path):
    hooks = [
        {"type": "stop_at_step", "num_steps": 10_000_000},
        {"type": "history_saver", "every_n_step": 20},
        {"type": "checkpoint_saver", "save_steps": 1000},
    ]
    config = _config(tmp_path, hooks=hooks)
    raw = yaml.safe_load(config.read_text())
    raw["data"]["epochs"] = None  # repeat until stopped: the run must not end by itself before the signal
    config.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    base = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(config), "--run-dir", str(base),
         "--sweep", "graph.optimizer.learning_rate=0.01,0.02"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    history = base / "learning_rate=0.01" / "history.csv"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if history.exists() and len(history.read_text().splitlines()) > 2:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    summary = json.loads((base / "learning_rate=0.01" / "summary.json").read_text())
    assert summary["status"] == "interrupted", (summary, out, err)
    assert (base / "learning_rate=0.01" / f"model.ckpt-{summary['final_global_step']}.index").exists()  # saved
    assert not (base / "learning_rate=0.02").exists()
    assert "1 run(s) not started" in err and "interrupted" in out


def test_values_split_like_hydra_and_names_are_file_safe():
    assert split_values("0.001,0.003, 0.01") == ["0.001", "0.003", "0.01"]
    assert split_values("[64,32],[128]") == ["[64,32]", "[128]"]
    assert split_values("'a,b',c") == ["'a,b'", "c"]
    axes = parse_sweep(["graph.params.hidden_units=[64,32],[128]", "hooks.0.every_n_steps=1,2",
                        "hooks.1.every_n_steps=3"])
    assert axes[0] == SweepAxis("graph.params.hidden_units", ("[64,32]", "[128]"))
    name = run_name(axes, ("[64,32]", "1", "3"))
    assert name == "hidden_units=_64,32_,hooks.0.every_n_steps=1,hooks.1.every_n_steps=3"
    assert "/" not in run_name([SweepAxis("name", ("../../etc",))], ("../../etc",))
    long = run_name([SweepAxis("a", ("x" * 500,))], ("x" * 500,))
    assert len(long) <= 120 and long != run_name([SweepAxis("a", ("x" * 501,))], ("x" * 501,))


@pytest.mark.parametrize(
    "text", ["graph.optimizer.learning_rate", "=1,2", "data.batch_size=4,,8", "data.batch_size=4,4"]
)
def test_a_malformed_sweep_is_exit_2(tmp_path, text):
    result = cli.invoke(app, ["train", str(_config(tmp_path)), "--run-dir", str(tmp_path / "s"), "--sweep", text])
    assert result.exit_code == 2 and "--sweep: error:" in result.output, result.output
    assert not (tmp_path / "s").exists()


def test_the_python_api_sweeps_and_lists_the_runs(tmp_path, captured):
    import hookrun.runner as api

    result = api.sweep(_config(tmp_path), ["data.batch_size=4,8"], run_dir=tmp_path / "s", console=captured.console)
    assert [(r.name, r.status) for r in result.runs] == [("batch_size=4", "finished"), ("batch_size=8", "finished")]
    table = api.runs(result.base_dir, sort="name")
    assert [(r.name, r.status, r.distinguishing) for r in table.runs] == [
        ("batch_size=4", "finished", ["data.batch_size=4"]), ("batch_size=8", "finished", ["data.batch_size=8"])
    ]


def test_sweep_names_stay_distinct_when_a_suffix_meets_another_value(tmp_path):
    """``d_.csv-2``, ``dé.csv``, ``dü.csv``: the third (``train=d_.csv`` taken) was suffixed ``-2``, the first's name.

    Two combinations then trained into one run directory. Data directories, so nothing is trained here.
    """
    from hookrun.runner.trained.sweep import plan_sweep

    config = _config(tmp_path)
    for name in ("d_.csv-2", "dé.csv", "dü.csv"):
        (tmp_path / name).mkdir()
        write_csv(tmp_path / name / "part.csv", linear_rows(32, seed=1))
    _, runs, _ = plan_sweep(config, ["data.train=d_.csv-2,dé.csv,dü.csv"], run_dir=tmp_path / "s")
    names = [run.name for run in runs]
    assert len(set(names)) == 3 and names[:2] == ["train=d_.csv-2", "train=d_.csv"], names
    assert not (tmp_path / "s").exists()


def test_a_path_both_set_and_swept_is_exit_2(tmp_path):
    """``--set data.batch_size=4 --sweep data.batch_size=8,16``: the sweep silently won over the --set."""
    result = cli.invoke(app, [
        "train", str(_config(tmp_path)), "--run-dir", str(tmp_path / "s"), "--set", "data.batch_size=4",
        "--sweep", "data.batch_size=8,16",
    ])
    assert result.exit_code == 2, result.output
    assert "`data.batch_size` is both set (--set) and swept (--sweep)" in result.output
    assert not (tmp_path / "s").exists()
