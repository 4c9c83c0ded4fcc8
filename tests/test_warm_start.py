"""``graph.warm_start``: a new run starts from another run's weights, as tf.estimator.WarmStartSettings (issue 15)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.runner.config import load_checked, load_config
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "200"})


def _project(tmp_path, name, *, graph=None, hooks=None, data=None):
    """``tmp_path/project/<name>.yaml`` reading ``data/train.csv`` (relative to it); returns its path."""
    project = tmp_path / "project"
    if not (project / "data" / "train.csv").exists():
        (project / "data").mkdir(parents=True, exist_ok=True)
        write_csv(project / "data" / "train.csv", linear_rows(64, seed=1))
    config = base_config(
        hooks=hooks if hooks is not None else [
            {"type": "stop_at_step", "num_steps": 40}, {"type": "checkpoint_saver", "save_steps": 40}
        ],
        data={"train": "data/train.csv", **(data or {})},
        graph=graph or {},
    )
    path = project / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _trained(tmp_path, run_train, name="a", **kwargs):
    """Train ``name`` into ``tmp_path/project/runs/<name>``; returns that run directory."""
    run_dir = tmp_path / "project" / "runs" / name
    run_train(load_config(_project(tmp_path, name, **kwargs)), run_dir=run_dir)
    return run_dir


WINDOW_HOOKS = [{"type": "stop_at_step", "num_steps": 8}, {"type": "history_saver", "every_n_step": 4}]


def test_a_warm_start_begins_below_a_cold_start_at_global_step_zero(tmp_path, monkeypatch, run_train):
    _trained(tmp_path, run_train)
    cold = run_train(load_config(_project(tmp_path, "cold", hooks=WINDOW_HOOKS)), run_dir=tmp_path / "cold")
    warm_config = _project(tmp_path, "warm", hooks=WINDOW_HOOKS, graph={"warm_start": {"from": "runs/a"}})
    monkeypatch.chdir(tmp_path)  # `from` is relative to the config file, not to the current directory
    warm = run_train(load_config(warm_config), run_dir=tmp_path / "warm")

    assert (warm.initial_step, warm.final_global_step) == (0, 8)  # the new run starts at global step 0
    assert warm.history[0]["mean_loss"] < 0.5 * cold.history[0]["mean_loss"], (warm.history, cold.history)
    note = next(n for n in warm.notes if n.startswith("warm start from"))
    assert "runs/a/model.ckpt-40" in note and "loaded 2 of 2 trainable variables" in note, note
    saved = yaml.safe_load((tmp_path / "warm" / "config.yaml").read_text())  # self-contained: from is absolute
    assert saved["graph"]["warm_start"]["from"] == str(tmp_path / "project" / "runs" / "a")
    assert not [n for n in cold.notes if "warm" in n]


def _kernel_and_bias(run_dir):
    reader = tf.train.load_checkpoint(str(run_dir))
    names = sorted(n for n, _ in tf.train.list_variables(str(run_dir)) if not n.startswith("global_step"))
    kernel = next(n for n in names if n.endswith("kernel") and "/" in n and "Momentum" not in n)
    bias = next(n for n in names if n.endswith("bias") and "Momentum" not in n)
    return reader.get_tensor(kernel), reader.get_tensor(bias)


ONE_STEP = [{"type": "stop_at_step", "num_steps": 1}, {"type": "checkpoint_saver", "save_steps": 1}]
TINY_STEP = {"optimizer": {"name": "sgd", "learning_rate": 1e-12}}


def test_vars_selects_what_is_loaded_and_the_rest_keeps_its_initializer(tmp_path, run_train):
    source = _trained(tmp_path, run_train)
    kernel_a, bias_a = _kernel_and_bias(source)
    assert abs(float(bias_a[0])) > 0.1  # trained: y = 2a - 3b + 1
    config = _project(
        tmp_path, "b", hooks=ONE_STEP,
        graph={**TINY_STEP, "warm_start": {"from": str(source), "vars": ".*kernel"}},
    )
    result = run_train(load_config(config), run_dir=tmp_path / "b")
    kernel_b, bias_b = _kernel_and_bias(tmp_path / "b")
    np.testing.assert_allclose(kernel_b, kernel_a, rtol=1e-6)
    assert abs(float(bias_b[0])) < 1e-6  # the zeros initializer, not the checkpoint's
    note = next(n for n in result.notes if n.startswith("warm start"))
    assert "loaded 1 of 2" in note and "not matched by vars: 1" in note and "bias" in note, note


RENAMED_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable(params["name"], [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    return {"loss": tf.identity(loss, name="loss")}
"""


def test_rename_loads_a_variable_saved_under_another_name(tmp_path, run_train):
    project = tmp_path / "project"
    project.mkdir()
    (project / "renamed_builder.py").write_text(RENAMED_BUILDER, encoding="utf-8")
    graph = {"builder": "renamed_builder:build", "params": {"name": "old_w"}}
    source = _trained(tmp_path, run_train, graph=graph)
    old = tf.train.load_variable(str(source), "old_w")
    assert np.abs(old).max() > 0.5
    config = _project(
        tmp_path, "b", hooks=ONE_STEP,
        graph={**TINY_STEP, "builder": "renamed_builder:build", "params": {"name": "new_w"},
               "warm_start": {"from": str(source), "rename": {"new_w": "old_w"}}},
    )
    run_train(load_config(config), run_dir=tmp_path / "b")
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path / "b"), "new_w"), old, rtol=1e-6)

    bad = _project(  # a rename to a name the checkpoint lacks: at its line, before training
        tmp_path, "c", graph={"builder": "renamed_builder:build", "params": {"name": "new_w"},
                              "warm_start": {"from": str(source), "rename": {"new_w": "old_ww"}}},
    )
    result = cli.invoke(app, ["train", str(bad), "--run-dir", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert "graph.warm_start.rename.new_w" in result.output and "did you mean `old_w`" in result.output
    assert not (tmp_path / "c").exists()


def test_a_shape_mismatch_is_exit_2_before_training_and_writes_nothing(tmp_path, run_train):
    source = _trained(tmp_path, run_train, graph={"builder": "dnn_regressor", "params": {"hidden_units": [4]}})
    config = _project(
        tmp_path, "b",
        graph={"builder": "dnn_regressor", "params": {"hidden_units": [8]}, "warm_start": {"from": str(source)}},
    )
    result = cli.invoke(app, ["train", str(config), "--run-dir", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    assert f"{config}:" in result.output and "graph.warm_start.from" in result.output
    assert "is [2, 4] there, [2, 8] in the run's graph" in result.output, result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "b").exists()
    # a vars pattern that selects no variable is reported at vars
    narrowed = _project(
        tmp_path, "c", hooks=ONE_STEP,
        graph={"builder": "dnn_regressor", "params": {"hidden_units": [8]},
               "warm_start": {"from": str(source), "vars": "nomatch"}},
    )
    result = cli.invoke(app, ["train", str(narrowed), "--run-dir", str(tmp_path / "c")])
    assert result.exit_code == 2 and "graph.warm_start.vars" in result.output, result.output


@pytest.mark.parametrize("source", ["runs/missing", "data", "data/train.csv"])
def test_a_missing_source_is_exit_2_in_validate_and_train(tmp_path, source):
    config = _project(tmp_path, "b", graph={"warm_start": {"from": source}})
    for args in (["validate", str(config)], ["train", str(config), "--run-dir", str(tmp_path / "b")]):
        result = cli.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert f"{config}:" in result.output and "graph.warm_start.from" in result.output, result.output
        assert "run directory or a checkpoint prefix" in result.output
    assert not (tmp_path / "b").exists()


def test_a_bad_vars_regex_is_a_config_error(tmp_path):
    config = _project(tmp_path, "b", graph={"warm_start": {"from": "runs/a", "vars": "dnn/(["}})
    result = cli.invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "graph.warm_start.vars" in result.output and "not a regular expression" in result.output, result.output


def test_a_resume_restores_its_own_checkpoint_not_the_warm_start_source(tmp_path, run_train):
    dnn = {"builder": "dnn_regressor", "params": {"hidden_units": [4]}}
    source = _trained(tmp_path, run_train, graph=dnn)
    hooks = [{"type": "stop_at_step", "num_steps": 3}, {"type": "checkpoint_saver", "save_steps": 3}]
    config = _project(tmp_path, "b", hooks=hooks, graph={**dnn, "warm_start": {"from": str(source)}})
    first = run_train(load_config(config), run_dir=tmp_path / "b")
    assert first.final_global_step == 3 and any(n.startswith("warm start") for n in first.notes)
    # The source now holds a model of another shape: applying the warm start again would fail.
    shutil.rmtree(source)
    _trained(tmp_path, run_train, graph={"builder": "dnn_regressor", "params": {"hidden_units": [7]}})
    kernel = tf.train.load_variable(str(tmp_path / "b"), "hidden_0/kernel")

    loaded, _ = load_checked(config, run_dir=tmp_path / "b")
    resumed = run_train(loaded, run_dir=tmp_path / "b")
    assert (resumed.initial_step, resumed.final_global_step) == (3, 6)
    assert any("warm_start not applied: resuming" in n for n in resumed.notes), resumed.notes
    assert tf.train.load_variable(str(tmp_path / "b"), "hidden_0/kernel").shape == kernel.shape

    shutil.rmtree(source)  # gone altogether: the resume still needs nothing from it
    loaded, issues = load_checked(tmp_path / "b" / "config.yaml")
    assert not issues
    assert run_train(loaded, run_dir=tmp_path / "b").initial_step == 6


def test_a_source_whose_latest_checkpoint_is_damaged_is_exit_2_not_an_older_one(tmp_path, run_train):
    """The source's model.ckpt-40 truncated: the run warm-started from model.ckpt-0 (the initial weights) quietly."""
    source = _trained(tmp_path, run_train)
    assert (source / "model.ckpt-0.index").is_file() and (source / "model.ckpt-40.index").is_file()
    shard = source / "model.ckpt-40.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:8])
    config = _project(tmp_path, "b", hooks=ONE_STEP, graph={"warm_start": {"from": str(source)}})
    result = cli.invoke(app, ["train", str(config), "--run-dir", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    assert "graph.warm_start.from" in result.output and "model.ckpt-40: the latest checkpoint there is damaged" in (
        result.output)
    assert f"{source / 'model.ckpt-0'}, global step 0" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "b").exists()


def test_a_source_checkpoint_deleted_after_the_checks_still_warm_starts(tmp_path, monkeypatch, run_train):
    """The source run's max_to_keep deletes the chosen checkpoint before the new session's init_op reads it.

    Simulated deterministically: every checkpoint file of the source is deleted right before the
    session is created (after the checks chose and read model.ckpt-40).
    """
    import tempfile

    import hookrun.runner.training.session as session_phase

    source = _trained(tmp_path, run_train)
    kernel_a, bias_a = _kernel_and_bias(source)
    pins = tmp_path / "tmp"
    pins.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(pins))  # where the pinned copy goes (TMPDIR)
    original = session_phase.run_monitored
    seen = []

    def deleted_first(*args, **kwargs):
        for path in source.glob("model.ckpt-*"):
            path.unlink()
        seen.append(sorted(p.name for d in pins.iterdir() for p in d.iterdir()))
        return original(*args, **kwargs)

    monkeypatch.setattr(session_phase, "run_monitored", deleted_first)
    config = _project(tmp_path, "b", hooks=ONE_STEP, graph={**TINY_STEP, "warm_start": {"from": str(source)}})
    result = run_train(load_config(config), run_dir=tmp_path / "b")

    assert not list(source.glob("model.ckpt-*"))
    assert seen == [["model.ckpt-40.data-00000-of-00001", "model.ckpt-40.index"]], seen  # pinned: that one only
    kernel_b, bias_b = _kernel_and_bias(tmp_path / "b")
    np.testing.assert_allclose(kernel_b, kernel_a, rtol=1e-6)
    np.testing.assert_allclose(bias_b, bias_a, rtol=1e-6)
    note = next(n for n in result.notes if n.startswith("warm start"))
    assert f"{source / 'model.ckpt-40'}:" in note, note  # the note names the source, not the pinned copy
    assert not list(pins.iterdir())  # the pinned copy is removed after the session


def test_a_selected_variable_missing_from_the_checkpoint_is_exit_2_naming_it_and_a_vars_that_works(
    tmp_path, run_train
):
    """As WarmStartSettings (``Tensor ... is not found in ... checkpoint``): not a silently fresh variable."""
    source = _trained(tmp_path, run_train, graph={"builder": "dnn_regressor", "params": {"hidden_units": [4]}})
    deeper = {"builder": "dnn_regressor", "params": {"hidden_units": [4, 4]}}
    config = _project(tmp_path, "b", hooks=ONE_STEP, graph={**deeper, "warm_start": {"from": str(source)}})
    result = cli.invoke(app, ["train", str(config), "--run-dir", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert f"{config}:" in output and "graph.warm_start.vars" in output, output
    assert "hidden_1/kernel" in output and "hidden_1/bias" in output and "graph.warm_start.rename" in output, output
    assert "Traceback" not in output and not (tmp_path / "b").exists()

    suggested = re.search(r"leave them out with vars: '([^']+)'", output).group(1)
    fixed = _project(
        tmp_path, "c", hooks=ONE_STEP,
        graph={**deeper, **TINY_STEP, "warm_start": {"from": str(source), "vars": suggested}},
    )
    run = run_train(load_config(fixed), run_dir=tmp_path / "c")
    note = next(n for n in run.notes if n.startswith("warm start"))
    assert "loaded 4 of 6" in note and "not matched by vars: 2 (hidden_1/kernel, hidden_1/bias)" in note, note
    np.testing.assert_allclose(
        tf.train.load_variable(str(tmp_path / "c"), "hidden_0/kernel"),
        tf.train.load_variable(str(source), "hidden_0/kernel"), rtol=1e-6,
    )


def test_a_checkpoint_deleted_before_it_is_pinned_is_chosen_again_or_named(tmp_path, monkeypatch, run_train):
    """A run directory: the next readable checkpoint is chosen; a checkpoint prefix: exit 2 saying what happened."""
    import hookrun.runner.graph.warm_start as warm

    source = _trained(tmp_path, run_train)
    original = warm.pin_checkpoint
    asked = []

    def deleted_first(prefix, *args, **kwargs):
        asked.append(prefix)
        if len(asked) == 1:  # the source run's max_to_keep, between the choice and the pinning
            for path in source.glob(f"{prefix.rsplit('/', 1)[1]}.*"):
                path.unlink()
        return original(prefix, *args, **kwargs)

    monkeypatch.setattr(warm, "pin_checkpoint", deleted_first)
    config = _project(tmp_path, "b", hooks=ONE_STEP, graph={"warm_start": {"from": str(source)}})
    result = run_train(load_config(config), run_dir=tmp_path / "b")
    assert asked == [str(source / "model.ckpt-40"), str(source / "model.ckpt-0")]
    assert any(n.startswith(f"warm start from {source / 'model.ckpt-0'}:") for n in result.notes), result.notes

    asked.clear()
    _trained(tmp_path, run_train, name="c")
    prefix = tmp_path / "project" / "runs" / "c" / "model.ckpt-40"
    source = prefix.parent
    config = _project(tmp_path, "d", hooks=ONE_STEP, graph={"warm_start": {"from": str(prefix)}})
    failed = cli.invoke(app, ["train", str(config), "--run-dir", str(tmp_path / "d")])
    assert failed.exit_code == 2, failed.output
    output = " ".join(failed.output.split())
    assert "graph.warm_start.from" in output and f"{prefix}: the checkpoint was deleted while it was being read" in (
        output), output
    assert not (tmp_path / "d").exists()


def test_a_run_refused_after_the_warm_start_pinned_its_source_removes_the_pinned_copy(tmp_path, monkeypatch, run_train):
    """A refusal between the graph build (which pins the source) and the session still removes the pinned copy.

    A symlink planted at an event file name in the new run directory is refused (exit 2) after the
    warm start has pinned the source checkpoint and before any session: the copy must go then too,
    not only at interpreter exit.
    """
    import tempfile

    from hookrun.common.errors import SetupError

    source = _trained(tmp_path, run_train)
    pins = tmp_path / "tmp"
    pins.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(pins))  # where the pinned copy goes (TMPDIR)
    run_dir = tmp_path / "b"
    run_dir.mkdir()  # a run killed before its first checkpoint (a directory that is no run is refused earlier)
    (run_dir / "summary.json").write_text('{"status": "running", "started": "2026-01-01T00:00:00Z"}\n')
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    (run_dir / "events.out.tfevents.1.planted").symlink_to(victim)
    config = _project(tmp_path, "b", hooks=ONE_STEP, graph={**TINY_STEP, "warm_start": {"from": str(source)}})

    with pytest.raises(SetupError, match="symlink") as caught:
        run_train(load_config(config), run_dir=run_dir)
    # `caught` keeps the failed call's frames alive, so only an explicit removal passes (not the GC fallback)
    assert caught.traceback and victim.read_text(encoding="utf-8") == "keep me"
    assert not list(pins.iterdir()), list(pins.iterdir())  # no hookrun-pinned-* left behind
