"""Hostile input to ``hookrun predict``, ``export``, ``evaluate``, ``runs`` and ``train --sweep`` (issues 15, 16).

Each test here failed before its fix. Real TensorFlow, real files; the run trains 4 steps.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import warnings

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.runner.config import load_config
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "200"})

STEPS = [{"type": "stop_at_step", "num_steps": 4}, {"type": "checkpoint_saver", "save_steps": 4}]


#: Every test here shares the module-scoped ``trained`` run: one pytest-xdist worker, so it trains once.
pytestmark = pytest.mark.xdist_group("test_trained_attacks")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run of 4 steps (checkpoints at steps 0 and 4) on ``data.csv``, with a 25 % validation split; never changed."""
    from hookrun.runner.trainer import train

    where = tmp_path_factory.mktemp("trained")
    write_csv(where / "data.csv", linear_rows(48, seed=3))
    config = base_config(hooks=STEPS, data={"train": "data.csv", "validation_split": 0.25})
    (where / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = train(load_config(where / "run.yaml"), run_dir=where / "run")
    assert result.final_global_step == 4
    return where


@pytest.fixture
def run(trained, tmp_path, monkeypatch):
    """A copy of the trained run in ``tmp_path/run`` (free to damage), its data in ``tmp_path/data.csv``; cwd there."""
    shutil.copytree(trained / "run", tmp_path / "run", symlinks=True)
    shutil.copy(trained / "data.csv", tmp_path / "data.csv")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "run"


def _one_line_exit_2(args, *words):
    """Run the CLI; assert exit 2, one stderr line holding every one of ``words``, no traceback."""
    result = cli.invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, (args, result.stderr)
    assert all(word in lines[0] for word in words), (args, lines[0])
    assert "Traceback" not in result.output
    return lines[0]


def _snapshot(directory):
    """Every file under ``directory``: relative path -> bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


def test_overwrite_never_replaces_a_file_of_the_run_directory(run, tmp_path):
    """``--output RUN/preprocessing.json --overwrite`` replaced the run's preprocessing with predictions."""
    (run / "best").mkdir()
    before = _snapshot(run)
    data = ["--data", "data.csv"]
    for name in ("preprocessing.json", "config.yaml", "checkpoint", "summary.json", "model.ckpt-4.index"):
        _one_line_exit_2(["predict", str(run), *data, "--output", f"run/{name}", "--overwrite"], "a file of the run")
    _one_line_exit_2(["export", str(run), "--output", "run/best", "--overwrite"], "a file of the run directory")
    (tmp_path / "link.json").symlink_to(run / "config.yaml")  # refused as a link to an input file is
    _one_line_exit_2(["predict", str(run), *data, "-o", "link.json", "--overwrite"], "a file of the run directory")
    assert (tmp_path / "link.json").is_symlink()
    assert _snapshot(run) == before
    done = cli.invoke(app, ["predict", str(run), *data, "--output", "run/preds.csv"])  # beside them is fine
    assert done.exit_code == 0, done.output
    assert cli.invoke(app, ["predict", str(run), *data, "--output", "run/preds.csv", "--overwrite"]).exit_code == 0


def test_overwrite_never_removes_a_fifo(run, tmp_path):
    """A FIFO (or a device: ``/dev/null``) at ``--output`` was replaced by a regular file with ``--overwrite``."""
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    _one_line_exit_2(["predict", str(run), "--data", "data.csv", "-o", "out.csv", "--overwrite"], "not a regular")
    _one_line_exit_2(["export", str(run), "-o", "out.csv", "--overwrite"], "not a regular")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "out.csv", "run"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (a directory no one can create files in)")
def test_an_output_directory_that_cannot_be_written_is_one_line_exit_2(run):
    """Was ``internal error: FileNotFoundError`` (exit 1). /proc refuses new files even to root."""
    _one_line_exit_2(["predict", str(run), "--data", "data.csv", "-o", "/proc/preds.csv"], "cannot write in /proc")
    _one_line_exit_2(["export", str(run), "-o", "/proc/model"], "cannot write in /proc")


def test_the_predictions_file_gets_the_umask_permissions_not_0600(run, tmp_path):
    """``mkstemp`` made the CSV ``0600``: unreadable to the group that reads ``runs/``."""
    from hookrun.runner import predict

    mask = os.umask(0o022)
    try:
        predict(run, ["data.csv"], tmp_path / "preds.csv")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "preds.csv").stat().st_mode) == 0o644


def test_a_damaged_latest_checkpoint_is_refused_not_replaced_by_an_older_one(run, tmp_path):
    """Truncated ``model.ckpt-4``: predict, export and evaluate used ``model.ckpt-0`` (untrained) without a word."""
    shard = run / "model.ckpt-4.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:10])
    before = _snapshot(run)
    cases = [
        ["predict", str(run), "--data", "data.csv", "-o", "out.csv"],
        ["export", str(run), "-o", "out"],
        ["evaluate", str(run)],
    ]
    for args in cases:
        line = _one_line_exit_2(args, "model.ckpt-4: the latest checkpoint is damaged", "--checkpoint")
        assert str(run / "model.ckpt-0") in line
    assert _snapshot(run) == before and not (tmp_path / "out.csv").exists() and not (tmp_path / "out").exists()
    older = cli.invoke(app, [*cases[0], "--checkpoint", str(run / "model.ckpt-0")])  # the user's choice
    assert older.exit_code == 0, older.output


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda p: p["columns"][0].update(std="x"), "columns[0].std must be a positive number, not 'x'"),
        (lambda p: p["columns"][0].update(std=0), "columns[0].std must be a positive number, not 0"),
        (lambda p: p["columns"][1].update(mean=None), "columns[1].mean must be a number, not None"),
        (lambda p: p["columns"][0].update(kind="text"), "columns[0].kind must be"),
        (lambda p: p.update(columns={}), "`columns` must be a non-empty list"),
        (lambda p: p.update(format=99), "format 99"),
        (lambda p: p["label"].update(vocabulary=5), "label.vocabulary must be a list"),
    ],
)
def test_a_hand_edited_preprocessing_json_is_one_line_exit_2(run, tmp_path, edit, words):
    """A string ``std`` was ``internal error: TypeError``; ``mean: null`` or ``std: 0`` predicted silently."""
    path = run / "preprocessing.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    edit(state)
    path.write_text(json.dumps(state), encoding="utf-8")
    for args in (["predict", str(run), "--data", "data.csv", "-o", "out.csv"], ["export", str(run), "-o", "out"]):
        _one_line_exit_2(args, "preprocessing.json: not a hookrun preprocessing state", words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "run"]


def test_numbers_beyond_float32_are_one_warning_naming_the_cell(run, tmp_path):
    """``1e300`` became ``inf`` with numpy's ``RuntimeWarning: overflow encountered in cast`` and its source line."""
    from hookrun.common.errors import DataWarning
    from hookrun.runner import predict

    (tmp_path / "big.csv").write_text("a,b\n0.5,1\n1e300,1\n-1e39,2\ninf,0\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = predict(run, ["big.csv"], tmp_path / "preds.csv")
    assert result.rows == 4
    assert [type(w.message) for w in caught] == [DataWarning], [str(w.message) for w in caught]
    assert "big.csv:3: column 'a' (column 1) holds 1e+300, beyond float32" in str(caught[0].message)
    assert "3 cell(s)" in str(caught[0].message)
    values = (tmp_path / "preds.csv").read_text().splitlines()[1:]
    assert np.isfinite(float(values[0].split(",")[1])) and all(v.split(",")[1] in ("inf", "-inf") for v in values[1:])


ROWS_MODEL_FN = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec, layers


def model_fn(features, labels, mode, params):
    out = layers.dense(features, 1, "out")
    if mode != "infer":
        return EstimatorSpec(mode=mode, loss=tf.reduce_mean(tf.square(out - labels)))
    kind = params["kind"]
    if kind == "scalar":
        return EstimatorSpec(mode=mode, predictions=tf.reduce_mean(out))
    if kind == "extra_scalar":
        return EstimatorSpec(mode=mode, predictions={"predictions": out, "mean": tf.reduce_mean(out)})
    if kind == "first_row":
        return EstimatorSpec(mode=mode, predictions=out[:1])
    return EstimatorSpec(mode=mode, predictions=out[: tf.shape(out)[0] // 2 + 1])  # half the rows
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize(
    "kind, words",
    [
        ("scalar", "returns the prediction 'predictions' a scalar"),
        ("extra_scalar", "returns the prediction 'mean' a scalar"),
        ("first_row", "returns 1 rows of the prediction 'predictions' for a batch of 48 input rows"),
        ("half", "returns 25 rows of the prediction 'predictions' for a batch of 48 input rows"),
    ],
)
def test_a_prediction_without_one_entry_per_row_is_exit_2(tmp_path, write_module, monkeypatch, kind, words):
    """A scalar was ``internal error: IndexError``; ``out[:1]`` gave every row the first row's prediction."""
    from hookrun.runner.trainer import train

    module = write_module("rows_model_fn", ROWS_MODEL_FN)
    write_csv(tmp_path / "data.csv", linear_rows(48, seed=4))
    config = base_config(hooks=STEPS, graph={"builder": f"{module}:model_fn", "params": {"kind": kind}})
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    train(load_config(tmp_path / "c.yaml"), run_dir=tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    _one_line_exit_2(["predict", "run", "--data", "data.csv", "-o", "out.csv"], "graph.builder", words)
    assert not list(tmp_path.glob("*out.csv*"))


def test_an_empty_data_path_is_exit_2_not_the_whole_current_directory(run, tmp_path):
    """``--data ""`` (``--data "$UNSET"``) read every data file of the current directory (and evaluate wrote it)."""
    before = _snapshot(run)
    _one_line_exit_2(["predict", str(run), "--data", "", "-o", "out.csv"], "--data: an empty path")
    _one_line_exit_2(["evaluate", str(run), "--data", " "], "--data: an empty path")
    assert _snapshot(run) == before and not (tmp_path / "out.csv").exists()


def test_evaluating_files_never_replaces_the_validation_evaluation(run, tmp_path):
    """``evaluate --data test.csv`` wrote ``eval-4.json`` over the validation one, which ``hookrun runs`` reads."""
    from hookrun.runner import evaluate
    from hookrun.runner.trained.runs import list_runs

    write_csv(tmp_path / "test.csv", linear_rows(16, seed=9) * 5)  # other rows: other values
    own = evaluate(run)
    assert own.output == str(run / "eval-4.json")
    other = evaluate(run, data=["test.csv"])
    assert other.output == str(run / "eval-4-test.json") and other.metrics["val_loss"] != own.metrics["val_loss"]
    saved = json.loads((run / "eval-4.json").read_text())
    assert saved["data"] == ["validation"] and saved["metrics"] == own.metrics
    (row,) = list_runs(run).runs
    assert row.metrics["val_loss"].final == own.metrics["val_loss"]


@pytest.mark.parametrize("command", ["predict", "export", "evaluate"])
def test_a_checkpoint_deleted_while_read_is_one_line_exit_2(run, tmp_path, monkeypatch, command):
    """A run still training deletes old checkpoints (max_to_keep): ``internal error: NotFoundError`` (seen live)."""
    import hookrun.runner.graph.build as build
    import hookrun.runner.trained.inference as inference

    def deleting(original):
        def wrapped(*args, **kwargs):
            built = original(*args, **kwargs)
            for path in run.glob("model.ckpt-4.*"):  # the trainer's rotation, between choosing and restoring
                path.unlink()
            return built
        return wrapped

    monkeypatch.setattr(inference, "build_inference_graph", deleting(inference.build_inference_graph))
    monkeypatch.setattr(build, "build_evaluation_graph", deleting(build.build_evaluation_graph))
    args = {"predict": ["--data", "data.csv", "-o", "out.csv"], "export": ["-o", "out"], "evaluate": []}[command]
    _one_line_exit_2([command, str(run), *args], "model.ckpt-4: the checkpoint was deleted while it was being read")
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "out").exists()
    assert not list(run.glob("eval-*.json"))


def test_bad_data_files_are_named_by_the_option_that_gave_them(run, tmp_path):
    """``evaluate --data /dev/zero`` blamed `data.train`, a key of the run's config the user never typed."""
    before = _snapshot(run)
    for command in (["evaluate", str(run)], ["predict", str(run), "-o", "out.csv"]):
        _one_line_exit_2([*command, "--data", "/dev/zero"], "/dev/zero: not a regular file", "`--data` takes data")
        line = _one_line_exit_2([*command, "--data", "missing.csv"], "missing.csv", "check `--data`")
        assert "data.train" not in line and "relative to the current directory" in line, line
    assert _snapshot(run) == before


def _limited(args, file_size_bytes, cwd):
    """``hookrun ARGS`` in a process whose files may hold at most ``file_size_bytes`` (``ulimit -f``)."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_bytes, file_size_bytes))

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "hookrun.cli.app", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=cwd, preexec_fn=limit)


def test_a_refused_write_is_one_line_naming_the_output_file(run, tmp_path):
    """Under ``ulimit -f``: export printed "internal error: OutOfRangeError: <temporary path>; File too large",
    predict "internal error: OSError: [Errno 27] File too large" (no file named), both exit 1 as bugs."""
    before = _snapshot(run)
    cases = [
        (["export", str(run), "-o", "model"], 4096, tmp_path / "model" / "saved_model.pb", tmp_path / "model"),
        (["predict", str(run), "--data", "data.csv", "-o", "out.csv"], 512, tmp_path / "out.csv", tmp_path / "out.csv"),
    ]
    for args, limit, named, output in cases:
        done = _limited(args, limit, tmp_path)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 1 and lines == [
            f"error: cannot write {named}: [Errno 27] File too large; nothing was written at {output} (free space, "
            "raise the file-size limit, or choose another --output)"
        ], (args, done.stderr)
        assert not output.exists() and not list(tmp_path.glob(".*.tmp"))  # nor its temporary
    assert _snapshot(run) == before


def test_no_usable_temporary_directory_is_one_line_exit_2(run, tmp_path):
    """``ulimit -f 0``: "internal error: FileNotFoundError: No usable temporary directory found" (inside
    ``import tensorflow``), exit 1."""
    done = _limited(["evaluate", str(run)], 0, tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: no usable temporary directory: none of [") and "/tmp" in lines[0], lines
    assert "set TMPDIR to a writable directory" in lines[0]


def test_export_on_a_full_disk_is_one_line_exit_1(run, tmp_path):
    """A full file system: 49 lines of TensorFlow trace, "internal error: ResourceExhaustedError"."""
    import subprocess
    import sys

    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(small)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "COLUMNS": "400"}
        done = subprocess.run([sys.executable, "-m", "hookrun.cli.app", "export", str(run), "-o", str(small / "m")],
                              capture_output=True, text=True, timeout=240, env=env)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 1 and len(lines) == 1, done.stderr
        assert lines[0].startswith(f"error: cannot write {small / 'm'}/") and "[Errno 28] No space left" in lines[0]
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)
