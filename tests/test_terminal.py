"""What a person sees in an 80-column terminal, through the real ``hookrun`` command (a subprocess; variants
that only move flags run the same CLI in-process, :func:`in_process`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def hookrun(*args: str, columns: int = 80, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hookrun ARGS`` as a user does (``python -m hookrun.cli.app``), COLUMNS as given, no colour."""
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", *args], capture_output=True, text=True, timeout=300, env=env,
        cwd=cwd,
    )


# --- issue 13 item 13: --help placeholders, train's help paragraphs, --version ---


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["validate", "--help"], ["list-hooks", "--help"]])
def test_help_shows_no_type_placeholder_for_flags_and_a_readable_one_for_set(args):
    done = hookrun(*args)
    assert done.returncode == 0, done.stderr
    assert "<bool>" not in done.stdout
    assert "list[str]" not in done.stdout
    if args[0] in ("train", "validate"):
        assert "--set" in done.stdout and "PATH=VALUE" in done.stdout


def test_train_help_paragraphs_wrap_to_the_terminal():
    done = hookrun("train", "--help")
    lines = [line.strip() for line in done.stdout.splitlines()]
    # a docstring line break must not cut a sentence: no line ends after a lone option or mid-phrase
    assert "--local-cluster" not in lines
    assert not any(line.endswith("or") for line in lines if not line.startswith("│")), done.stdout
    # each prose line fills the 80 columns unless it ends its paragraph
    prose = done.stdout.split("Arguments")[0].splitlines()
    for line, after in zip(prose, prose[1:], strict=False):
        if line.strip() and after.strip():
            assert len(line.rstrip()) + len(after.split()[0]) + 1 > 78, (line, after)


def test_version_prints_the_package_version_without_tensorflow():
    code = (
        "import sys\nfrom hookrun.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('CODE', e.code)\n"
        "print('TF', any(m == 'tensorflow' or m.startswith('tensorflow.') for m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[0] == f"hookrun {version('hookrun')}", done.stdout + done.stderr
    assert "CODE 0" in done.stdout and "TF False" in done.stdout
    # the TensorFlow build as tf.sysconfig.get_build_info() reports it, read without importing TensorFlow
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    kind = f"CUDA build (CUDA {build['cuda_version']}, cuDNN {build['cudnn_version']})" if build.get(
        "is_cuda_build") else "CPU-only build"
    assert done.stdout.splitlines()[1].startswith(f"tensorflow {tf.__version__}, {kind}; package "), done.stdout
    assert "devices: not listed (hookrun --version --devices" in done.stdout


def in_process(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``hookrun ARGS`` through typer's CliRunner in this process (COLUMNS as given, no colour), as
    :func:`hookrun` returns it: for what depends on the arguments, not on a fresh process (no TensorFlow import)."""
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    result = CliRunner(env={"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}).invoke(app, list(args))
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


#: The first order runs the real command; the others are the same command with the flags moved, in-process.
@pytest.mark.parametrize(("args", "run"), [
    (["--version", "--devices"], hookrun), (["--devices", "--version"], in_process), (["--devices"], in_process),
])
def test_version_with_devices_lists_what_tensorflow_finds(args, run):
    import tensorflow as tf

    done = run(*args)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"hookrun {version('hookrun')}" and lines[1].startswith(f"tensorflow {tf.__version__}, ")
    found = [d.name.removeprefix("/physical_device:") for d in tf.config.list_physical_devices()]
    assert lines[-1].startswith(f"devices: {found[0]}"), done.stdout
    assert ("(no GPU visible)" in lines[-1]) == (not tf.config.list_physical_devices("GPU"))


# --- issue 13 item 14: list-hooks at 80 columns, list-hooks NAME, the built-in graph builders ---


def test_list_hooks_reads_whole_at_80_columns():
    from hookrun.config_schemas.builders import BUILDER_PARAMS
    from hookrun.hooks.catalogue import hook_catalogue

    done = hookrun("list-hooks")
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "…" not in done.stdout  # nothing cut short
    text = " ".join(done.stdout.replace("│", " ").split())
    for entry in hook_catalogue():
        assert f"mirrors {entry['mirrors']}" in text, entry["mirrors"]
    for builder, model in BUILDER_PARAMS.items():
        assert builder in text
        for param in model.model_fields:
            assert param in text, (builder, param)


@pytest.mark.parametrize("name", ["evaluation", "early_stopping", "dnn_classifier"])
def test_list_hooks_name_shows_the_full_parameter_table(name):
    from hookrun.hooks.catalogue import builder_catalogue, hook_catalogue

    entry = {e["type"]: e for e in hook_catalogue()} | {e["name"]: e for e in builder_catalogue()}
    done = hookrun("list-hooks", name)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for column in ("parameter", "type", "default", "description"):
        assert column in text
    for param in entry[name]["params"]:
        assert param["name"] in text
        for token in param["type"].split():  # e.g. list[int > 0], not eaten as rich markup
            assert token in text, param["type"]
        assert " ".join(param["description"].split()[:3]) in text, param["description"]


def test_list_hooks_unknown_name_exits_2_with_did_you_mean():
    done = hookrun("list-hooks", "evaluaton")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "`evaluation`" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


# --- issue 13 item 15: validate prints the plan once; the phases are a legend ---


def test_validate_prints_the_hook_order_once(tmp_path):
    from hookrun.runner.session.plan import PHASE_WHEN

    config = ROOT / "configs" / "mtcars_linear.yaml"
    done = hookrun("validate", str(config))
    assert done.returncode == 0, done.stderr
    for hook in ("progress_bar", "history_saver", "checkpoint_saver"):
        assert len(re.findall(rf"(?<!\w){hook}(?!\w)", done.stdout)) == 1, (hook, done.stdout)
    text = " ".join(done.stdout.split())
    for phase, when in PHASE_WHEN.items():
        assert f"{phase} {when}" in text
    assert max(len(line.rstrip()) for line in done.stdout.splitlines()) <= 80


# --- issue 13 item 17: TensorFlow's `auc` deprecation notice is not the user's ---


def _binary_config(tmp_path: Path, graph: dict) -> Path:
    import numpy as np
    import yaml

    rng = np.random.default_rng(0)
    rows = rng.random((48, 2))
    lines = ["a,b,y"] + [f"{a:.4f},{b:.4f},{int(a + b > 1)}" for a, b in rows]
    (tmp_path / "bin.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = {
        "name": "bin",
        "graph": graph,
        "data": {"train": "bin.csv", "label": "y", "validation_split": 0.25, "batch_size": 8, "epochs": 1},
        "hooks": [{"type": "evaluation", "every_n_steps": 2}],
    }
    path = tmp_path / "bin.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_binary_classifier_run_prints_no_tensorflow_deprecation_notice(tmp_path):
    path = _binary_config(tmp_path, {"builder": "linear_classifier", "params": {"n_classes": 2}})
    done = hookrun("train", str(path), "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert "val_auc" in done.stdout  # the streaming AUC was built and evaluated
    assert "deprecated" not in done.stderr + done.stdout, done.stderr
    assert "Instructions for updating" not in done.stderr


def test_a_users_own_deprecated_call_still_warns(tmp_path):
    (tmp_path / "my_builder.py").write_text(
        "import tensorflow as tf\n\n\n"
        "def build(features, labels, params):\n"
        "    v1 = tf.compat.v1\n"
        "    w = v1.get_variable('w', [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())\n"
        "    score = tf.sigmoid(tf.matmul(features, w))\n"
        "    v1.metrics.auc(tf.cast(labels > 0.5, tf.bool), score)  # the user's call: its notice is theirs\n"
        "    return {'loss': tf.identity(tf.reduce_mean(tf.square(score - labels)), name='loss')}\n",
        encoding="utf-8",
    )
    path = _binary_config(tmp_path, {"builder": "my_builder:build"})
    done = hookrun("train", str(path), "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert "auc (from tensorflow" in done.stderr and "is deprecated" in done.stderr, done.stderr


# --- issue 13 item 11: after Ctrl-C the run's end is said once ---


def test_ctrl_c_says_interrupted_once_without_the_ended_early_warning(tmp_path):
    import signal
    import time

    import yaml

    config = {
        "name": "sigint",
        "graph": {"builder": "linear_regressor", "optimizer": {"name": "sgd", "learning_rate": 0.01}},
        "data": {"train": str(ROOT / "configs" / "data" / "mtcars.csv"), "label": "mpg", "features": ["cyl", "wt"],
                 "batch_size": 8, "epochs": None},
        "hooks": [
            {"type": "stop_at_step", "last_step": 10_000_000},
            {"type": "progress_bar"},
            {"type": "history_saver", "every_n_step": 50},
            {"type": "checkpoint_saver", "save_steps": 400},
        ],
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(path), "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "80"},
    )
    try:
        deadline = time.monotonic() + 60
        while not (run_dir / "history.csv").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    both = out + err
    assert both.count("interrupted at step") == 1 and "checkpoint saved" in err, both
    assert "before the expected" not in both, both


# --- issue 13 item 12: the run's end names the latest and the best checkpoint; the best row is marked ---


def test_the_end_of_an_early_stopped_run_names_both_checkpoints_and_marks_the_best_row(tmp_path):
    import json

    import yaml

    path = _binary_config(tmp_path, {"builder": "linear_classifier", "params": {"n_classes": 2},
                                     "optimizer": {"name": "sgd", "learning_rate": 0.5}})
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["data"]["epochs"] = 30
    config["hooks"] = [
        {"type": "evaluation", "every_n_steps": 6, "log": False},
        {"type": "early_stopping", "monitor": "val_loss", "patience": 2, "min_delta": 0.01, "keep_best": True},
        {"type": "history_saver", "every_n_step": 6},
        {"type": "checkpoint_saver", "save_steps": 30},
    ]
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    run_dir = tmp_path / "run"
    done = hookrun("train", str(path), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    best, last = summary["best"]["step"], summary["final_global_step"]
    assert best < last, "the setup must stop after a later, not better, evaluation"
    assert summary["best"]["path"] == f"best/model.ckpt-{best}"
    out = done.stdout
    assert f"checkpoint: {run_dir / f'model.ckpt-{last}'} (latest)" in out
    best_path = re.escape(str(run_dir / "best" / f"model.ckpt-{best}"))
    # the value before the path: a long path wraps after it, never inside the number
    assert re.search(rf"best checkpoint \(step {best}, val_loss [\d.]+\): {best_path}\n", out), out
    marked = [line for line in out.splitlines() if "◀ best" in line and "│" in line]
    assert len(marked) == 1 and marked[0].split("│")[0].strip() == str(best), out
    caption = " ".join(out.split())
    assert "total_loss: its sum over that window" in caption and "not a running total" in caption
    assert max(len(line.rstrip()) for line in out.splitlines() if "│" in line) <= 80


# --- issue 13 item 10: progress_bar shows the epoch, ETA and steps/s; hook log lines print above the bar ---


def _bar_config(tmp_path: Path, epochs: int, **bar: object) -> Path:
    import yaml

    config = {
        "name": "bar",
        "graph": {"builder": "linear_regressor", "optimizer": {"name": "sgd", "learning_rate": 0.01}},
        "data": {"train": str(ROOT / "configs" / "data" / "mtcars.csv"), "label": "mpg", "features": ["cyl", "wt"],
                 "batch_size": 8, "epochs": epochs},  # 32 rows: 4 steps an epoch
        "hooks": [
            {"type": "progress_bar", **bar},
            {"type": "step_counter", "every_n_secs": 0.3},
            {"type": "logging_tensor", "every_n_secs": 0.4},
        ],
    }
    path = tmp_path / "bar.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_plain_progress_lines_show_epoch_eta_and_rate(tmp_path):
    path = _bar_config(tmp_path, epochs=1500, plain_every_n_secs=0.3)  # 6000 steps, ~2 s
    done = hookrun("train", str(path), "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("Training ")]
    assert lines[-1].startswith("Training 6000/6000 (100%) epoch 1500/1500 "), lines[-1]
    assert re.search(r" [\d,]+ steps/s loss: ", lines[-1]), lines[-1]
    middle = [line for line in lines[:-1] if "ETA" in line]
    assert middle, done.stdout  # a line while training: the time left
    step, epoch = re.search(r"Training (\d+)/6000 \(\d+%\) epoch (\d+)/1500 \d+:\d\d ETA \d+:\d\d ", middle[0]).groups()
    assert int(epoch) == -(-int(step) // 4)  # the epoch that step trained in (4 steps an epoch)


def test_live_bar_in_a_terminal_shows_epoch_eta_rate_and_log_lines_above_it(tmp_path):
    import pty
    import select

    path = _bar_config(tmp_path, epochs=2500)  # 10000 steps, a few seconds
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "80", "LINES": "30", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "hookrun.cli.app", "train", str(path), "--run-dir",
                             str(tmp_path / "run")], stdout=secondary, stderr=secondary, env=env, close_fds=True)
    os.close(secondary)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], 120)
            if not ready:
                break
            try:
                data = os.read(primary, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        proc.wait(timeout=120)
        os.close(primary)
    assert proc.returncode == 0
    raw = b"".join(chunks).decode("utf-8", "replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)  # drop cursor moves, erases, colours
    frames = [f for f in re.split(r"[\r\n]+", text) if f.startswith("Training ")]
    assert any(re.search(r"epoch \d+/2500 \d+:\d\d ETA \d+:\d\d [\d,]+ steps/s loss: ", f) for f in frames), frames[-3:]
    assert all(len(f.rstrip()) <= 80 for f in frames)
    # every hook log line starts a line of its own: never glued behind a bar frame
    for line in re.split(r"[\r\n]+", text):
        for marker in ("global_step/sec:", "global_step = "):
            if marker in line:
                assert line.startswith(marker), line


def test_version_with_a_broken_tensorflow_says_so_in_one_line(tmp_path):
    """A ``tensorflow`` module that fails to import (shadowing the installed one): --version reads no build
    from it and still exits 0; --devices says it does not import, one line, exit 2, no traceback."""
    fake = tmp_path / "tensorflow"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('libcudart.so.12: cannot open shared object file')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NO_COLOR": "1"}
    run = [sys.executable, "-m", "hookrun.cli.app"]
    plain = subprocess.run([*run, "--version"], capture_output=True, text=True, timeout=120, env=env)
    assert plain.returncode == 0 and ", build unknown; package tensorflow" in plain.stdout, plain.stdout + plain.stderr
    devices = subprocess.run([*run, "--version", "--devices"], capture_output=True, text=True, timeout=120, env=env)
    assert devices.returncode == 2, devices.stdout + devices.stderr
    assert devices.stderr.strip() == (
        "error: TensorFlow does not import: libcudart.so.12: cannot open shared object file"
    ), devices.stderr
