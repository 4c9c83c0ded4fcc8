"""Issue 29: what a new user meets in the first hour, as the README and ``--help`` show it.

The messages, the ``--set`` examples, the epoch count and the demo's footer, each checked where a user sees it.
"""

from __future__ import annotations

import math
import re

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.hooks.progress_bar.columns import epoch_of
from tests.conftest import CONFIGS, REPO, base_config

runner = CliRunner(env={"COLUMNS": "200"})
BUNDLED = sorted(CONFIGS.glob("*.yaml"))


def write_yaml(path, config):
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- --set examples


def _set_examples(text: str) -> list[str]:
    """The concrete ``PATH=VALUE`` examples in ``text`` (``hooks.N.KEY`` placeholders left out)."""
    return [m for m in re.findall(r"\b((?:[a-z_]+|\d+)(?:\.(?:[a-z_]+|\d+))+=[\w.]+)", text) if "N." not in m]


def test_the_set_help_examples_work_on_every_bundled_config():
    from hookrun.cli.options import SetOption

    help_text = SetOption.__metadata__[0].help
    examples = _set_examples(help_text)
    assert examples, help_text
    for config in BUNDLED:
        args = [item for example in examples for item in ("--set", example)]
        result = runner.invoke(app, ["validate", str(config), *args])
        assert result.exit_code == 0, (config.name, examples, result.output)


@pytest.mark.parametrize(("page", "start"), [("README.md", "`hookrun COMMAND --help` says more."),
                                            ("docs/config.md", "- `--set PATH=VALUE` (repeatable")])
def test_the_pages_set_examples_work_on_the_config_they_name(page, start):
    text = (REPO / page).read_text(encoding="utf-8")
    paragraph = text[text.index(start):].split("\n\n")[0].split("\n- ")[0]
    examples = [e for e in re.findall(r"--set ([^`\s]+)", paragraph) if e != "PATH=VALUE"]
    assert len(examples) >= 2, paragraph
    named = re.findall(r"`(configs/[\w.]+\.yaml)`", paragraph)
    for config in named or [str(CONFIGS / "mtcars_linear.yaml")]:
        for example in examples:
            result = runner.invoke(app, ["validate", str(REPO / config), "--set", example])
            assert result.exit_code == 0, (config, example, result.output)


# ------------------------------------------------------------------------------------------- messages


def test_help_keeps_square_brackets_as_written():
    """typer reads help as rich markup: ``[batch]`` vanished from ``export --help`` ("(: float32")."""
    result = runner.invoke(app, ["export", "--help"])
    assert result.exit_code == 0
    assert "([batch]: float32" in result.stdout
    assert "(: float32" not in result.stdout


@pytest.fixture
def trained_run(tmp_path, linear_csv):
    config = base_config(data={"epochs": 1}, hooks=[{"type": "checkpoint_saver", "save_steps": 100}])
    path = write_yaml(tmp_path / "c.yaml", config)
    result = runner.invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    return tmp_path / "run"


@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_a_missing_data_file_names_data_and_the_current_directory(command, trained_run, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    args = [command, str(trained_run), "--data", "missing.csv"]
    if command == "predict":
        args += ["--output", str(tmp_path / "p.csv")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert str(elsewhere / "missing.csv") in result.stderr
    assert "check `--data` (paths are relative to the current directory)" in result.stderr
    assert "config file" not in result.stderr and "data.train" not in result.stderr


# ------------------------------------------------------------------------------------------- the epoch shown


@pytest.mark.parametrize(("rows", "batch", "epochs"), [(16_478, 64, 30), (16_478, 64, 4), (32, 10, 6), (64, 8, 10)])
def test_the_last_step_is_in_the_last_epoch(rows, batch, epochs):
    per = rows / batch
    last = math.ceil(epochs * per)  # the last batch may be partial: it is epoch `epochs`' last rows
    assert epoch_of(last, per) == epochs
    assert epoch_of(1, per) == 1
    step = math.floor(per) + 1  # its first row is row floor(per) * batch of the repeated stream
    assert epoch_of(step, per) == 1 + (math.floor(per) * batch >= rows)


# ------------------------------------------------------------------------------------------- make demo's footer


def test_the_demo_footer_exports_into_a_version_folder():
    """TF Serving loads ``<model base path>/<version>/``: the printed ``--output`` ends in a number."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    outputs = re.findall(r"hookrun export \S+ --output (\S+)", makefile)
    assert outputs, "no export command in the Makefile"
    for output in outputs:
        assert re.fullmatch(r"\d+", output.rstrip("/").rsplit("/", 1)[-1]), output


# ------------------------------------------------------------------------------------------- the Python API


def test_train_takes_a_dict_config_and_overrides(tmp_path, linear_csv, monkeypatch, captured):
    from hookrun.runner import train

    monkeypatch.chdir(tmp_path)  # a dict's relative paths are relative to the current directory
    config = base_config(hooks=[{"type": "history_saver", "every_n_step": 4}])
    before = yaml.safe_dump(config)
    config["data"]["train"] = linear_csv  # a Path is its string
    result = train(config, "data.epochs=1", run_dir="run", console=captured.console)  # one override as a str
    config["data"]["train"] = "data.csv"
    assert result.final_global_step == 64 // 8  # one epoch, not base_config's 10
    assert result.run_dir == (tmp_path / "run").resolve() or result.run_dir == tmp_path / "run"
    assert yaml.safe_dump(config) == before  # the caller's dict is not modified
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["data"]["epochs"] == 1


def test_a_bad_dict_config_is_a_config_error_naming_the_key(tmp_path, captured):
    from hookrun.config_schemas.loader import ConfigError
    from hookrun.runner import train

    config = base_config()
    config["data"]["batch_size"] = 0
    with pytest.raises(ConfigError) as info:
        train(config, console=captured.console, run_dir=tmp_path / "run")
    assert "<dict config>" in str(info.value) and "data.batch_size" in str(info.value)
    assert info.value.exit_code == 2
    with pytest.raises(TypeError, match="path, a dict or a LoadedConfig"):
        train(42)
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------- graph.optimizer.momentum


def test_momentum_is_documented_and_printed_only_where_it_applies():
    config_md = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    assert re.search(r"^\s+#? ?momentum: 0\.9 .*momentum and rmsprop", config_md, flags=re.M)
    sgd = runner.invoke(app, ["validate", "--print", str(CONFIGS / "mtcars_linear.yaml")])
    assert sgd.exit_code == 0
    optimizer = yaml.safe_load(sgd.stdout[: sgd.stdout.index("\n\n")] if "\n\n" in sgd.stdout else sgd.stdout)
    assert "momentum" not in optimizer["graph"]["optimizer"]
    rms = runner.invoke(app, ["validate", "--print", str(CONFIGS / "mtcars_linear.yaml"),
                              "--set", "graph.optimizer.name=rmsprop"])
    assert "momentum: 0.9" in rms.stdout


def test_a_saved_config_with_the_old_momentum_line_resumes_without_a_graph_change():
    from hookrun.runner.run_dir.config_change import compare_configs

    new = "graph:\n  optimizer: {name: adam, learning_rate: 0.1}\n"
    old = "graph:\n  optimizer: {name: adam, learning_rate: 0.1, momentum: 0.9}\n"
    assert compare_configs(old, new).shape_diff == ""
    changed = "graph:\n  optimizer: {name: momentum, learning_rate: 0.1, momentum: 0.5}\n"
    assert compare_configs(changed, "graph:\n  optimizer: {name: momentum, learning_rate: 0.1, momentum: 0.9}\n"
                           ).shape_diff != ""


# ------------------------------------------------------------------------------------------- --sweep beside a run


def test_a_default_sweep_beside_a_trained_run_is_listed_by_hookrun_runs(tmp_path, linear_csv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = base_config(name="lin", data={"epochs": 1}, hooks=[{"type": "stop_at_step", "num_steps": 2}])
    path = write_yaml(tmp_path / "c.yaml", config)
    first = runner.invoke(app, ["train", str(path)])  # runs/lin: a run directory
    assert first.exit_code == 0, first.output
    swept = runner.invoke(app, ["train", str(path), "--sweep", "graph.optimizer.learning_rate=0.01,0.1"])
    assert swept.exit_code == 0, swept.output
    assert not (tmp_path / "runs" / "lin" / "learning_rate=0.01").exists()
    assert (tmp_path / "runs" / "lin-sweep" / "learning_rate=0.01" / "summary.json").exists()
    listed = runner.invoke(app, ["runs", "--json"])
    import json

    names = {row["name"] for row in json.loads(listed.stdout)["runs"]}
    assert names == {"lin", "lin-sweep/learning_rate=0.01", "lin-sweep/learning_rate=0.1"}, names


def test_a_sweep_into_a_named_run_directory_is_refused(tmp_path, linear_csv):
    config = base_config(data={"epochs": 1}, hooks=[{"type": "stop_at_step", "num_steps": 2}])
    path = write_yaml(tmp_path / "c.yaml", config)
    run = tmp_path / "run"
    assert runner.invoke(app, ["train", str(path), "--run-dir", str(run)]).exit_code == 0
    swept = runner.invoke(app, ["train", str(path), "--run-dir", str(run), "--sweep", "data.batch_size=4,8"])
    assert swept.exit_code == 2, swept.output
    assert f"{run}: is a run directory" in swept.stderr and "--run-dir" in swept.stderr
    assert not (run / "batch_size=4").exists()


# ----------------------------------------------------------------------------------- 80 columns, one number format

#: The demo's history (California housing, dollars), as ``hookrun train`` hands it to the table.
DEMO_COLUMNS = ["step", "mean_loss", "total_loss", "rmse", "mae", "val_loss", "val_rmse", "val_mae"]
DEMO_ROWS = [
    {"step": 516 * i, "mean_loss": 0.5423 / i, "total_loss": 279.8234 / i, "rmse": 69483.21 - 900 * i,
     "mae": 50156.07 - 800 * i, "val_loss": 0.3573 / i, "val_rmse": 59775.13 - 700 * i, "val_mae": 41613.4 - 600 * i}
    for i in range(1, 16)
]


@pytest.mark.parametrize("width", [80, 60, 200])
def test_the_history_reads_whole_at_the_console_width(width):
    from rich.console import Console

    from hookrun.cli.render import history_table
    from hookrun.common.numbers import format_number

    console = Console(width=width, color_system=None, record=True)
    console.print(history_table(DEMO_ROWS, DEMO_COLUMNS, best_step=516 * 15, best_monitor="val_rmse"))
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    assert "…" not in text, text  # no header, no value cut short
    headers = [line for line in lines if line.startswith("step ")]
    shown = [word for line in headers for word in line.replace("┃", " ").split()]
    assert sorted(set(shown)) == sorted(DEMO_COLUMNS), headers
    assert len(headers) == (1 if width >= 120 else 2 if width == 80 else len(headers))
    for row in DEMO_ROWS:
        cells = [line for line in lines if line.split("│")[0].strip() == str(row["step"])]
        values = {cell.strip().removesuffix("◀ best").strip() for line in cells for cell in line.split("│")[1:]}
        for column in DEMO_COLUMNS[1:]:
            assert format_number(row[column]) in values, (column, cells)
    assert "val_rmse (early_stopping)" in " ".join(text.split())


def test_one_value_is_printed_one_way():
    from hookrun.common.numbers import format_number

    assert format_number(52243.4) == "52,243.4"
    assert [format_number(v) for v in (0.35731, 142.63, 11.944, 0.5, 1.23e-5, 2.5e10)] == [
        "0.3573", "142.6", "11.94", "0.5000", "1.230e-05", "2.500e+10"]
    assert format_number(float("nan")) == "nan" and format_number(None) == "" and format_number(1030) == "1,030"
    # the four places a val_* value is printed use it
    for module, text in [
        ("hooks/evaluation/hook.py", "format_number(value)"),
        ("cli/commands/train.py", "format_number(best.value)"),
        ("cli/commands/runs.py", "format_number(v.final)"),
        ("cli/render.py", "format_number(value)"),
    ]:
        assert text in (REPO / module).read_text(encoding="utf-8"), module


def test_the_best_checkpoint_line_puts_its_value_before_the_path(tmp_path, linear_csv):
    deep = tmp_path / ("a-long-directory-name-" * 3) / "run"
    config = base_config(
        data={"epochs": 2, "validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 3, "log": False},
               {"type": "early_stopping", "monitor": "val_loss", "patience": 5, "keep_best": True}],
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["train", str(path), "--run-dir", str(deep)])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if line.startswith("best checkpoint"))
    head = re.match(r"best checkpoint \(step \d+, val_loss ([\d.,e+-]+)\): ", line)
    assert head and len(head.group(0)) <= 80, line  # the number is whole within the first 80 columns


# ------------------------------------------------------------------------------- hookrun runs: the monitored metric


@pytest.mark.parametrize("width", [80, 120])
def test_runs_shows_the_early_stopping_metric_at_any_width(width, tmp_path):
    """The demo's runs: val_loss, val_mae, val_mse and val_rmse in dollars, early_stopping on val_rmse."""
    from rich.console import Console

    from hookrun.cli.commands.runs import render_runs
    from hookrun.runner.trained.runs import MetricValues, RunRow, RunsTable

    metrics = ["val_loss", "val_mae", "val_mse", "val_rmse"]
    values = {"val_loss": 0.2731, "val_mae": 36123.52, "val_mse": 2.7291e9, "val_rmse": 52243.41}
    rows = [
        RunRow(name=f"learning_rate={rate}", path=f"/r/{rate}", status="finished", started=f"2026-11-2{i}T10:00:00",
               steps=7740, wall_seconds=21.5, overrides=[f"graph.optimizer.learning_rate={rate}"],
               distinguishing=[f"graph.optimizer.learning_rate={rate}"], monitored=["val_rmse"],
               metrics={m: MetricValues(v * (1 + i / 10), v * (1 + i / 20), 7224, "min") for m, v in values.items()})
        for i, rate in enumerate(("0.001", "0.003", "0.01"))
    ]
    table = RunsTable(root=str(tmp_path), runs=rows, metrics=metrics)
    console = Console(width=width, color_system=None, record=True)
    render_runs(console, table)
    text = console.export_text()
    header = next(line for line in text.splitlines() if line.startswith("run "))
    assert "val_rmse" in header.split(), text
    assert "52,243.4 /" in text, text
    assert table.monitored == ["val_rmse"]


# ----------------------------------------------------------------------------------- the start and the end of a run


def test_the_device_note_comes_before_training_and_a_status_while_the_graph_is_built(tmp_path, linear_csv):
    import io

    from rich.console import Console

    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train

    config = base_config(device="auto", data={"epochs": 1},
                         hooks=[{"type": "progress_bar"}, {"type": "history_saver", "every_n_step": 4}])
    path = write_yaml(tmp_path / "c.yaml", config)
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system=None)
    result = train(load_config(path), run_dir=tmp_path / "run", console=console)
    text = console.file.getvalue()
    assert "reading the data and building the graph…" in text
    note = "note: device auto: no GPU visible, using CPU"
    assert note in text and text.index(note) < text.index("Training")
    assert result.notes_shown == len(result.notes) and "device auto: no GPU visible, using CPU" in result.notes
    # the CLI prints it once, before the history table
    cli = runner.invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run2")])
    assert cli.exit_code == 0, cli.output
    assert cli.stdout.count(note) == 1 and cli.stdout.index(note) < cli.stdout.index("History"), cli.stdout


def test_running_a_finished_run_again_says_it_is_complete_and_how_to_train_more(tmp_path, linear_csv):
    hooks = [{"type": "checkpoint_saver", "save_steps": 100}]
    path = write_yaml(tmp_path / "c.yaml", base_config(data={"epochs": 2}, hooks=hooks))
    run = tmp_path / "run"
    first = runner.invoke(app, ["train", str(path), "--run-dir", str(run)])
    assert first.exit_code == 0 and "the run is complete" not in first.stdout, first.output
    again = runner.invoke(app, ["train", str(path), "--run-dir", str(run)])
    assert again.exit_code == 0, again.output
    assert "trained 0 steps" in again.stdout
    line = next(line for line in again.stdout.splitlines() if line.startswith("the run is complete"))
    hint = "--set data.epochs=4"
    assert hint in line, line
    more = runner.invoke(app, ["train", str(path), "--run-dir", str(run), *hint.split()])  # the hint works
    assert more.exit_code == 0, more.output
    assert "trained 0 steps" not in more.stdout and "the run is complete" not in more.stdout, more.stdout


# ------------------------------------------------------------------------------------------- history.csv, metric names


def test_a_history_column_with_a_comma_round_trips_through_the_csv_module(tmp_path):
    import csv

    from hookrun.hooks.history_saver.hook import HistorySaverHook, read_history

    hook = HistorySaverHook.__new__(HistorySaverHook)  # only the file format: no graph needed
    hook.columns = ["step", "mean_loss", "total_loss", 'f1,macro', 'say "hi"']
    hook.rows = [{"step": 2, "mean_loss": 0.5, "total_loss": 1.0, "f1,macro": 0.25, 'say "hi"': None}]
    path = tmp_path / "history.csv"
    path.write_text(hook._csv_text(), encoding="utf-8")
    with path.open(newline="") as handle:
        assert list(csv.DictReader(handle)) == [
            {"step": "2", "mean_loss": "0.5", "total_loss": "1", "f1,macro": "0.25", 'say "hi"': ""}]
    skipped: list[str] = []
    assert read_history(path, skipped) == hook.rows and skipped == []


def test_a_builder_metric_that_is_no_tensorflow_name_is_a_config_error(tmp_path, linear_csv, write_module):
    module = write_module("comma_metric", """
        import tensorflow as tf

        def build(features, labels, params):
            w = tf.compat.v1.get_variable("w", [features.shape[1], 1])
            pred = tf.matmul(features, w)
            loss = tf.reduce_mean(tf.square(pred - labels))
            return {"loss": loss, "predictions": pred, "metrics": {"f1,macro": tf.reduce_mean(tf.abs(pred - labels))}}
    """)
    config = base_config(
        graph={"builder": f"{module}:build"}, data={"epochs": 1, "validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 2}, {"type": "history_saver", "every_n_step": 2}],
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    result = runner.invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "graph.builder: the metrics name 'f1,macro' is not one TensorFlow accepts" in result.stderr
    assert "e.g. 'f1_macro'" in result.stderr and "internal error" not in result.stderr
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------- shell completion


def test_shell_completion_is_offered_and_completes_without_tensorflow(monkeypatch):
    import os
    import subprocess
    import sys

    helped = runner.invoke(app, ["--help"])
    assert "--install-completion" in helped.stdout and "--show-completion" in helped.stdout
    import typer.completion

    # typer detects the shell from the parent process (shellingham): under CI's `sh` it refuses, so say bash
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")
    script = runner.invoke(app, ["--show-completion"])
    assert script.exit_code == 0 and "_HOOKRUN_COMPLETE=complete_bash" in script.stdout, script.output
    code = (
        "import sys\nsys.argv = ['hookrun']\nfrom hookrun.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TF' if any(m.startswith('tensorflow') for m in sys.modules) else 'no TF', file=sys.stderr)\n"
    )
    env = {**os.environ, "_HOOKRUN_COMPLETE": "complete_bash", "COMP_WORDS": "hookrun tr", "COMP_CWORD": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["train"], (done.stdout, done.stderr)
    assert done.stderr.strip().endswith("no TF"), done.stderr
    env.update(COMP_WORDS="hookrun train --ru", COMP_CWORD="2")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "--run-dir" in done.stdout.split(), done.stdout
