"""``hookrun train base.yaml --config override.yaml`` (and ``validate``): configs merged in order (issue 29).

Mappings merge key by key, lists (``hooks``) and scalars are replaced whole, ``--set`` comes last, and an
error names the file and line that set the value.
"""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "250"})

BASE_HOOKS = [{"type": "stop_at_step", "num_steps": 3}, {"type": "step_counter", "every_n_steps": 1}]


def _files(tmp_path):
    """``base.yaml`` (SGD at 0.05, batch 8, two hooks) and an empty ``overrides/`` directory beside it."""
    write_csv(tmp_path / "data.csv", linear_rows(32, seed=1))
    (tmp_path / "base.yaml").write_text(
        yaml.safe_dump(base_config(hooks=BASE_HOOKS), sort_keys=False), encoding="utf-8"
    )
    (tmp_path / "overrides").mkdir()
    return tmp_path / "base.yaml"


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _printed(result):
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.stdout)


def test_validate_merges_mappings_key_by_key_and_replaces_lists(tmp_path):
    base = _files(tmp_path)
    lr = _write(tmp_path / "overrides" / "lr.yaml", "graph:\n  optimizer:\n    learning_rate: 0.2\n")
    hooks = _write(tmp_path / "overrides" / "hooks.yaml", "hooks:\n- type: stop_at_step\n  num_steps: 7\n")
    printed = _printed(cli.invoke(app, ["validate", str(base), "--config", str(lr), "--config", str(hooks),
                                        "--print"]))
    assert printed["graph"]["optimizer"] == {**printed["graph"]["optimizer"], "name": "sgd", "learning_rate": 0.2}
    assert printed["data"]["batch_size"] == base_config()["data"]["batch_size"]  # the base's, untouched
    assert [(h["type"], h.get("num_steps")) for h in printed["hooks"]] == [("stop_at_step", 7)]  # replaced whole


def test_later_files_win_and_set_wins_over_every_file(tmp_path):
    base = _files(tmp_path)
    first = _write(tmp_path / "overrides" / "a.yaml", "data:\n  batch_size: 4\n  epochs: 2\n")
    second = _write(tmp_path / "overrides" / "b.yaml", "data:\n  batch_size: 16\n")
    args = ["validate", str(base), "--config", str(first), "--config", str(second), "--print"]
    printed = _printed(cli.invoke(app, args))
    assert (printed["data"]["batch_size"], printed["data"]["epochs"]) == (16, 2)
    printed = _printed(cli.invoke(app, [*args, "--set", "data.batch_size=5"]))
    assert printed["data"]["batch_size"] == 5


def test_an_error_names_the_file_and_line_that_set_the_value(tmp_path):
    base = _files(tmp_path)
    bad = _write(tmp_path / "overrides" / "bad.yaml", "# a bad rate\ngraph:\n  optimizer:\n    learning_rate: -1\n")
    result = cli.invoke(app, ["validate", str(base), "--config", str(bad)])
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith(f"{bad}:4:20: error: graph.optimizer.learning_rate: "), line
    # The same key set again by a later file: the later file is named.
    fixed = _write(tmp_path / "overrides" / "fixed.yaml", "graph:\n  optimizer:\n    learning_rate: 0.1\n")
    assert cli.invoke(app, ["validate", str(base), "--config", str(bad), "--config", str(fixed)]).exit_code == 0
    # A value only the base sets is still named in the base, at its own line.
    text = (tmp_path / "base.yaml").read_text().replace("batch_size: 8", "batch_size: 0")
    assert "batch_size: 0" in text
    _write(tmp_path / "base.yaml", text)
    result = cli.invoke(app, ["validate", str(base), "--config", str(fixed)])
    assert result.exit_code == 2, result.output
    number = text.splitlines().index("  batch_size: 0") + 1
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith(f"{base}:{number}:") and "data.batch_size" in line, line


def test_an_unknown_key_and_a_broken_file_are_named_in_the_override(tmp_path):
    base = _files(tmp_path)
    typo = _write(tmp_path / "overrides" / "typo.yaml", "data:\n  batch_sise: 4\n")
    result = cli.invoke(app, ["validate", str(base), "--config", str(typo)])
    assert result.exit_code == 2 and f"{typo}:2:" in result.stderr and "batch_size" in result.stderr, result.output
    broken = _write(tmp_path / "overrides" / "broken.yaml", "- a list\n")
    result = cli.invoke(app, ["validate", str(base), "--config", str(broken)])
    assert result.exit_code == 2 and result.stderr.startswith(f"{broken}:1:1: error: "), result.output
    missing = tmp_path / "overrides" / "missing.yaml"
    result = cli.invoke(app, ["validate", str(base), "--config", str(missing)])
    assert result.exit_code == 2 and str(missing) in result.stderr, result.output


def test_train_runs_the_composed_config_and_saves_it_whole(tmp_path):
    base = _files(tmp_path)
    lr = _write(tmp_path / "overrides" / "lr.yaml", "graph:\n  optimizer:\n    learning_rate: 0.2\nhooks:\n"
                "- type: stop_at_step\n  num_steps: 2\n")
    run = tmp_path / "run"
    result = cli.invoke(app, ["train", str(base), "--config", str(lr), "--run-dir", str(run)])
    assert result.exit_code == 0, result.output
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["graph"]["optimizer"]["learning_rate"] == 0.2 and len(saved["hooks"]) == 1
    assert yaml.safe_load((run / "summary.json").read_text())["final_global_step"] == 2


def test_inspect_builds_the_composed_graph(tmp_path):
    base = _files(tmp_path)
    dnn = _write(
        tmp_path / "overrides" / "dnn.yaml", "graph:\n  builder: dnn_regressor\n  params: {hidden_units: [3]}\n"
    )
    result = cli.invoke(app, ["inspect", str(base), "--config", str(dnn), "--filter", "kernel", "--json"])
    assert result.exit_code == 0, result.output
    variables = json.loads(result.stdout)["trainable_variables"]
    assert any(v["name"].endswith("kernel") and v["shape"] == [3, 1] for v in variables), variables


def test_a_sweep_over_a_composed_config_gives_every_run_the_files_values(tmp_path):
    base = _files(tmp_path)
    short = _write(tmp_path / "overrides" / "short.yaml", "data:\n  batch_size: 4\nhooks:\n"
                   "- type: stop_at_step\n  num_steps: 2\n")
    sweep = tmp_path / "sweep"
    result = cli.invoke(app, ["train", str(base), "--config", str(short), "--run-dir", str(sweep),
                              "--sweep", "graph.optimizer.learning_rate=0.01,0.02"])
    assert result.exit_code == 0, result.output
    for rate in ("0.01", "0.02"):
        saved = yaml.safe_load((sweep / f"learning_rate={rate}" / "config.yaml").read_text())
        assert saved["graph"]["optimizer"]["learning_rate"] == float(rate)
        assert saved["data"]["batch_size"] == 4 and [h["type"] for h in saved["hooks"]] == ["stop_at_step"]
