"""``data.input_fn``: an Estimator input_fn goes in as it is; its features and labels reach the model_fn untouched
(issue 24). The program is tests/input_fn_program.py (a model_fn and its input_fns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.runner.config import load_config
from tests.conftest import REPO, user_module

PROGRAM = REPO / "tests" / "input_fn_program.py"
PARAMS = {"rows": 64, "batch": 16, "epochs": 5, "learning_rate": 0.5}  # 4 batches an epoch, 20 in all


@pytest.fixture
def program(write_module) -> str:
    """The program's module, written beside the config under a unique name (fresh SEEN and CALLS)."""
    return write_module("input_fn_program", PROGRAM.read_text())


def write_config(
    tmp_path: Path,
    module: str,
    hooks: list[dict[str, Any]],
    input_fn: str = "input_fn",
    eval_input_fn: str | None = None,
    **session: Any,
) -> Any:
    data: dict[str, Any] = {"input_fn": f"{module}:{input_fn}", "seed": 0}
    if eval_input_fn is not None:
        data["eval_input_fn"] = f"{module}:{eval_input_fn}"
    config = {
        "name": "input-fn",
        "graph": {"builder": f"{module}:model_fn", "params": dict(PARAMS)},
        "data": data,
        "session": session,
        "hooks": hooks,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return load_config(path)


def checkpoint_values(run: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(run))
    return {name: tf.train.load_variable(latest, name) for name in ("w", "b", "global_step")}


def plain_monitored_session(module: str, steps: int) -> tuple[float, dict[str, np.ndarray]]:
    """The same model_fn and input_fn in a plain tf.compat.v1 MonitoredTrainingSession, graph seed 0."""
    import tensorflow as tf

    fns = user_module(module)
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        v1.train.get_or_create_global_step()
        features, labels = v1.data.make_one_shot_iterator(fns.input_fn(dict(PARAMS), "train", None)).get_next()
        spec = fns.model_fn(features, labels, "train", dict(PARAMS), None)
        w, b = (v for v in v1.global_variables() if v.op.name in ("w", "b"))
        with v1.train.MonitoredTrainingSession(checkpoint_dir=None, save_summaries_steps=None) as session:
            for _ in range(steps):
                _, loss = session.run([spec.train_op, spec.loss])
            values = session.run({"w": w, "b": b})
    return float(loss), values


def test_input_fn_trains_evaluates_resumes_untouched_and_matches_plain_tf(program, tmp_path, run_train, captured):
    import tensorflow as tf

    hooks = [
        {"type": "stop_at_step", "last_step": 6},
        {"type": "progress_bar"},
        {"type": "evaluation", "every_n_steps": 3},
        {"type": "history_saver", "every_n_step": 1},
        {"type": "checkpoint_saver", "save_steps": 3},
    ]
    loaded = write_config(tmp_path, program, hooks, eval_input_fn="eval_input_fn")
    run = tmp_path / "run"
    first = run_train(loaded, run_dir=run)
    assert (first.final_global_step, first.end_of_data) == (6, False)

    fns = user_module(program)
    # untouched: the model_fn got the iterator's own tensors, the input_fn's structure, dtypes and shapes
    seen = fns.SEEN["train"]
    dataset = fns.input_fn(dict(PARAMS), "train", None)
    features, labels = seen["features"], seen["labels"]
    assert set(features) == {"x", "city"}
    assert {k: (t.dtype, t.shape.as_list()) for k, t in features.items()} == {
        k: (s.dtype, s.shape.as_list()) for k, s in dataset.element_spec[0].items()
    }
    assert features["city"].dtype == tf.string and labels.dtype == tf.int64 and labels.shape.as_list() == [None]
    assert features["x"].op.type == "IteratorGetNext" and labels.op is features["x"].op
    # params as written: no mode, label_scale or feature_columns; hookrun's information in `config`
    assert seen["params"] == PARAMS and fns.SEEN["eval"]["params"] == PARAMS
    assert seen["config"].model_dir == str(run) and seen["config"].tf_random_seed == 0
    calls = [(mode, params) for mode, params, _ in fns.CALLS]
    assert calls[:2] == [("train", PARAMS), ("eval", PARAMS)]
    assert fns.CALLS[0][2].model_dir == str(run)

    assert [e["step"] for e in first.evaluations] == [3, 6]
    assert [row["step"] for row in first.history] == [1, 2, 3, 4, 5, 6]

    # the same model_fn and input_fn in a plain MonitoredTrainingSession give the same loss and weights
    plain_loss, plain_values = plain_monitored_session(program, 6)
    assert first.history[-1]["mean_loss"] == pytest.approx(plain_loss, rel=1e-6)
    hookrun_values = checkpoint_values(run)
    np.testing.assert_allclose(hookrun_values["w"], plain_values["w"], rtol=1e-6)
    np.testing.assert_allclose(hookrun_values["b"], plain_values["b"], rtol=1e-6, atol=1e-7)
    # the step-6 evaluation is the model at step 6 on every row of eval_input_fn (40 rows, batches 16, 16, 8)
    eval_features, eval_labels = fns.rows(40, 1)
    city = tf.one_hot(tf.strings.to_hash_bucket_fast(eval_features["city"], 5), 5).numpy()
    logits = np.concatenate([eval_features["x"], city], axis=1) @ plain_values["w"] + plain_values["b"]
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    assert first.evaluations[-1]["val_accuracy"] == pytest.approx(np.mean(logits.argmax(1) == eval_labels))
    val_loss = -np.mean(log_softmax[np.arange(40), eval_labels])
    assert first.evaluations[-1]["val_loss"] == pytest.approx(val_loss, rel=1e-5)

    # resume: the input_fn is called again and continues from the position saved in the checkpoint (said in one
    # line; tests/test_input_state.py): its 20 batches end the run at step 20, as an uninterrupted run
    hooks[0] = {"type": "stop_at_step", "last_step": 50}
    second = run_train(write_config(tmp_path, program, hooks, eval_input_fn="eval_input_fn"), run_dir=run)
    assert second.initial_step == 6
    assert f"data.input_fn {program}:input_fn continues from its position saved in the checkpoint" in captured.text
    assert (second.final_global_step, second.end_of_data) == (20, True)
    assert second.evaluations[-1]["step"] == 20

    from hookrun.runner import evaluate

    # `hookrun evaluate` on the run: its data.eval_input_fn, the evaluation hook's values at the same step
    result = evaluate(run)
    assert result.global_step == 20 and result.rows == 40
    assert result.metrics == pytest.approx({key: second.evaluations[-1][key] for key in result.metrics}, rel=1e-6)


def test_steps_per_run_and_the_tuple_of_tensors_form(program, tmp_path, run_train):
    hooks = [
        {"type": "stop_at_step", "last_step": 8},
        {"type": "history_saver", "every_n_step": 4},
        {"type": "checkpoint_saver", "save_steps": 4},
    ]
    fused = run_train(write_config(tmp_path, program, hooks, steps_per_run=4), run_dir=tmp_path / "fused")
    assert fused.final_global_step == 8
    _, plain_values = plain_monitored_session(program, 8)
    np.testing.assert_allclose(checkpoint_values(tmp_path / "fused")["w"], plain_values["w"], rtol=1e-5)

    tensors = run_train(write_config(tmp_path, program, [], input_fn="tensors_input_fn"), run_dir=tmp_path / "t")
    assert (tensors.final_global_step, tensors.end_of_data) == (20, True)  # the data's end ends the run


@pytest.mark.parametrize(
    ("input_fn", "says"),
    [
        ("raising_input_fn", "raised FileNotFoundError: no such file: /data/train-*.tfrecord (train mode)"),
        ("wrong_type_input_fn", "returned builtins.list; return a tf.data.Dataset of (features, labels)"),
        ("empty_input_fn", "returned an empty dataset (no element)"),
        ("filtered_empty_input_fn", "produced no element: its dataset ended before the first step"),
        ("renamed_input_fn", "gives the features city, xs, but graph.builder"),
        ("triple_input_fn", "returned a dataset whose elements are tuples of 3, not (features, labels) pairs"),
    ],
)
def test_hostile_input_fns_get_one_line_errors_naming_the_function(program, tmp_path, input_fn, says):
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    write_config(tmp_path, program, [{"type": "stop_at_step", "last_step": 3}], input_fn=input_fn)
    result = CliRunner().invoke(app, ["train", str(tmp_path / "config.yaml"), "--run-dir", str(tmp_path / "run")])
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    error_lines = [line for line in output.splitlines() if f"{program}:{input_fn}" in line]
    assert len(error_lines) == 1 and says in error_lines[0], output
    if input_fn == "renamed_input_fn":
        assert "reads features['x']" in error_lines[0]


def test_validate_checks_the_input_fn_form_and_module_without_tensorflow(tmp_path):
    import subprocess
    import sys
    import textwrap

    (tmp_path / "my_input.py").write_text("def input_fn():\n    raise SystemExit('never run by validate')\n")
    path = tmp_path / "config.yaml"
    config = {"name": "v", "graph": {"builder": "linear_regressor"}, "data": {"input_fn": "my_input:input_fn"}}

    def validate(data: dict[str, Any]) -> tuple[int, str]:
        path.write_text(yaml.safe_dump({**config, "data": data}, sort_keys=False), encoding="utf-8")
        code = textwrap.dedent(
            f"""
            import sys
            from hookrun.cli.app import app
            try:
                code = app(["validate", {str(path)!r}], standalone_mode=False)
            except SystemExit as stop:
                code = stop.code
            print("EXIT", code, "TF" if "tensorflow" in sys.modules else "noTF")
            """
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
        return done.returncode, done.stdout + done.stderr

    code, out = validate({"input_fn": "my_input:input_fn"})
    assert "noTF" in out and "never run" not in out and "EXIT 2" not in out, out
    code, out = validate({"input_fn": "my_input:input_fn", "eval_input_fn": "no_such_module:eval_input_fn"})
    assert "EXIT 2 noTF" in out and "data.eval_input_fn" in out and "no_such_module" in out, out
    code, out = validate({"input_fn": "my_input input_fn"})
    assert "EXIT 2 noTF" in out and "not an import path" in out, out


def test_the_migration_guides_worked_example_keeps_its_input_fn(tmp_path, run_train):
    """docs/migrating-from-estimator.md "Your input_fn stays": the program with only its imports changed, and
    the config, as written, train for 4 epochs, evaluate on the eval_input_fn and resume."""
    import re

    text = (REPO / "docs" / "migrating-from-estimator.md").read_text(encoding="utf-8")

    def block(heading: str, language: str) -> str:
        return re.search(rf"```{language}\n(.*?)```", text.split(heading, 1)[1], re.S).group(1)

    before = block("### Before (TensorFlow 1.x), `cities.py`", "python")
    imports = block("### With hookrun: the same file, its imports changed", "python")
    after = before.replace("import tensorflow as tf\n", "import tensorflow as tf\n" + imports, 1)
    after = after.replace("tf.estimator.EstimatorSpec", "EstimatorSpec").replace("tf.estimator.ModeKeys", "ModeKeys")
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert changed == [line for line in after.splitlines() if "EstimatorSpec" in line or "ModeKeys" in line]
    (tmp_path / "cities.py").write_text(after, encoding="utf-8")
    (tmp_path / "cities.yaml").write_text(block("### The config, `cities.yaml`", "yaml"), encoding="utf-8")
    run = tmp_path / "run"
    try:
        first = run_train(load_config(tmp_path / "cities.yaml", ["hooks[0].every_n_steps=32"]), run_dir=run)
    finally:
        import sys

        sys.modules.pop("cities", None)
    assert (first.final_global_step, first.end_of_data) == (64, True)  # 4 epochs x 512 rows / 32
    assert first.evaluations[-1]["step"] == 64 and 0.7 < first.evaluations[-1]["val_accuracy"] <= 1.0
    second = run_train(load_config(tmp_path / "cities.yaml"), run_dir=run)
    assert (second.initial_step, second.final_global_step) == (64, 128)  # read again from its start


@pytest.mark.parametrize("dense", [False, True])
def test_steps_per_run_stacks_fixed_batches_and_pulls_sparse_ones_one_per_step(program, tmp_path, run_train, dense):
    """A sparse feature cannot stack: the loop pulls one batch per step (get_next), the SparseTensor reaching
    the model_fn as a SparseTensor; fixed-shape dense batches of an endless dataset stack into one pull a call.
    Either way the weights after 8 steps are those of a plain MonitoredTrainingSession."""
    import tensorflow as tf
    from rich.console import Console

    from hookrun.runner.training.prepare import prepare

    config = {
        "name": "tags",
        "graph": {"builder": f"{program}:tagged_model_fn", "params": {"dense": dense}},
        "data": {"input_fn": f"{program}:tagged_input_fn", "seed": 0},
        "session": {"steps_per_run": 4},
        "hooks": [{"type": "stop_at_step", "last_step": 8}, {"type": "checkpoint_saver", "save_steps": 4}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    loaded = load_config(path)
    prepared = prepare(loaded, tmp_path / "run", Console(quiet=True))
    prepared.close()
    ops = {op.name.rsplit("/", 1)[-1] for op in prepared.built.graph.get_operations()}
    assert ("window" in ops) is dense
    if not dense:
        assert isinstance(user_module(program).SEEN["tags"], tf.SparseTensor)

    result = run_train(loaded, run_dir=tmp_path / "run")
    assert result.final_global_step == 8

    fns = user_module(program)
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        v1.train.get_or_create_global_step()
        batch = v1.data.make_one_shot_iterator(fns.tagged_input_fn({"dense": dense})).get_next()
        spec = fns.tagged_model_fn(*batch, "train", {"dense": dense})
        with v1.train.MonitoredTrainingSession(checkpoint_dir=None, save_summaries_steps=None) as session:
            for _ in range(8):
                session.run(spec.train_op)
            (w,) = session.run([v for v in v1.global_variables() if v.op.name == "w"])
    latest = tf.train.latest_checkpoint(str(tmp_path / "run"))
    np.testing.assert_allclose(tf.train.load_variable(latest, "w"), w, rtol=1e-5)


def test_an_endless_eval_input_fn_is_refused_naming_it(program, tmp_path, run_train):
    from hookrun.config_schemas.yaml_source import ConfigError

    hooks = [{"type": "stop_at_step", "last_step": 2}, {"type": "evaluation", "every_n_steps": 1}]
    loaded = write_config(tmp_path, program, hooks, eval_input_fn="endless_eval_input_fn")
    with pytest.raises(ConfigError, match=rf"eval_input_fn {program}:endless_eval_input_fn returned an endless"):
        run_train(loaded)
    assert not (tmp_path / "run").exists()  # nothing written
