"""What hookrun's own output does when the terminal or pipe cannot take it (issue 23), through real processes.

A reader that leaves (``| head -c 1``) ends training as a signal does, with a checkpoint; an ASCII
terminal gets escapes, not an ``internal error``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO, base_config, linear_rows, write_csv


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "COLUMNS": "100",
            "NO_COLOR": "1", "TERM": "dumb", **extra}


def _config(tmp_path: Path, hooks: list[dict]) -> Path:
    write_csv(tmp_path / "data.csv", linear_rows(64))
    config = base_config(hooks=hooks, data={"epochs": None, "validation_split": 0.25})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_a_closed_stdout_stops_training_gracefully_with_a_checkpoint(tmp_path: Path) -> None:
    """``hookrun train ... | head -c 1`` failed at the next log line: "EvaluationHook called sys.exit(1)"."""
    config = _config(tmp_path, [
        {"type": "stop_at_step", "num_steps": 1_000_000},  # only the closed pipe can stop it early
        {"type": "evaluation", "every_n_steps": 20},  # a line on stdout every 20 steps
        {"type": "checkpoint_saver", "save_steps": 1_000_000},
    ])
    run = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(config), "--run-dir", str(run)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=REPO,
    )
    assert process.stdout is not None
    first = process.stdout.read(1)  # as `head -c 1` does: one byte, then the reader is gone
    process.stdout.close()
    _, err = process.communicate(timeout=240)
    text = err.decode()
    assert first and process.returncode == 141, (process.returncode, text)
    assert "Traceback" not in text and "sys.exit" not in text and "internal error" not in text, text
    summary = json.loads((run / "summary.json").read_text())
    step = summary["final_global_step"]
    assert summary["status"] == "interrupted" and summary["signal"] == 13 and 0 < step < 1_000_000, summary
    assert (run / f"model.ckpt-{step}.index").exists()  # checkpoint_saver's end() saved the last step
    assert text.strip().splitlines()[-1] == (
        f"output closed (its reader left): stopped at step {step}, checkpoint saved: {run}/model.ckpt-{step}"
    ), text


def test_an_ascii_terminal_gets_escapes_and_exit_0(tmp_path: Path) -> None:
    """``PYTHONIOENCODING=ascii hookrun train`` finished, then exited 1: "internal error: UnicodeEncodeError"."""
    config = _config(tmp_path, [{"type": "stop_at_step", "num_steps": 3}])
    done = subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(config), "--run-dir", str(tmp_path / "run")],
        capture_output=True, env=_env(PYTHONIOENCODING="ascii"), cwd=REPO, timeout=240,
    )
    out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")  # nothing but ASCII reached them
    assert done.returncode == 0 and "internal error" not in err, (out, err)
    assert "global step 0 \\u2192 3" in out, out
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "finished"


def test_a_stop_asked_before_training_stops_it_before_its_first_step(make_config, run_train, tmp_path: Path) -> None:
    """The reader may leave while the data is read: the step loop then stops before its first step, once."""
    import signal

    from hookrun.runner.session import monitored

    hooks = [{"type": "stop_at_step", "num_steps": 5}, {"type": "checkpoint_saver", "save_steps": 100}]
    monitored.request_stop(signal.SIGPIPE)
    stopped = run_train(make_config(hooks=hooks))
    assert (stopped.signal, stopped.final_global_step, stopped.steps) == (signal.SIGPIPE, 0, 0)
    assert (tmp_path / "run" / "model.ckpt-0.index").exists()
    again = run_train(make_config(hooks=hooks))  # the request was used up: the resumed run trains
    assert (again.signal, again.final_global_step) == (None, 5)
