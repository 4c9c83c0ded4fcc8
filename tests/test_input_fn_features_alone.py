"""Issue 24: ``data.input_fn`` may return "a ``tf.data.Dataset`` of ``(features, labels)`` or of features alone".

As Estimator (``estimator.util.parse_iterator_result``): an element that is a tuple of two is
``(features, labels)``; anything else (a dict, even one whose values are tuples) is features, and the
model_fn gets ``labels=None`` in ``train`` and ``eval`` too. Here the labels ride inside the features
(``features["y"]``): a run on that dataset gives the weights of a run on the same rows as pairs, under
``steps_per_run`` 1 and 2 (windows stack features alone), with the evaluation hook, and on two towers;
a ``(features, None)`` tuple of tensors and a dataset of ``(features, None)`` train; a built-in builder,
which needs labels, is refused in one line naming the input_fn and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.runner.config import load_config

PROGRAM = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec

SEEN = []


def rows(n=32):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0]], np.float32) + 0.5).astype(np.float32)
    return x, y


def pairs_input_fn():
    x, y = rows()
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(8, drop_remainder=True).repeat()


def alone_input_fn():  # the labels inside the features
    x, y = rows()
    return tf.data.Dataset.from_tensor_slices({"x": x, "y": y}).batch(8, drop_remainder=True).repeat()


def nested_input_fn():  # a dict whose value is a tuple: features, not a (features, labels) pair
    x, y = rows()
    dataset = tf.data.Dataset.from_tensor_slices({"x": (x[:, :1], x[:, 1:]), "y": y})
    return dataset.batch(8, drop_remainder=True).repeat()


def none_input_fn():  # a dataset of (features, None)
    x, y = rows()
    return tf.data.Dataset.from_tensor_slices(({"x": x, "y": y}, None)).batch(8, drop_remainder=True).repeat()


def eval_input_fn():
    x, y = rows()
    return tf.data.Dataset.from_tensor_slices({"x": x, "y": y}).batch(8)


def tensors_input_fn():  # a (features, None) tuple of tensors
    x, y = rows()
    batch = tf.compat.v1.data.make_one_shot_iterator(
        tf.data.Dataset.from_tensor_slices({"x": x, "y": y}).batch(8, drop_remainder=True).repeat()
    ).get_next()
    return batch, None


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    SEEN.append((mode, labels is None))
    if labels is None:
        labels = features["y"]
    x = features["x"]
    if isinstance(x, tuple):
        x = tf.concat(x, axis=1)
    w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
    b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
    out = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.square(out - labels))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions={"y": out})
"""


def _config(tmp_path: Path, module: str, name: str, input_fn: str, builder: str = "", **extra: Any) -> Path:
    config = {
        "name": name,
        "graph": {"builder": builder or f"{module}:model_fn"},
        "data": {"input_fn": f"{module}:{input_fn}", "seed": 0, **extra.pop("data", {})},
        "hooks": [{"type": "stop_at_step", "last_step": 6}, {"type": "checkpoint_saver", "save_steps": 100},
                  *extra.pop("hooks", [])],
        **extra,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _weights(run_dir: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(run_dir))
    return {name: tf.train.load_variable(latest, name) for name in ("w", "b", "global_step")}


def _same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert int(got["global_step"]) == int(want["global_step"]) == 6
    for name in ("w", "b"):
        np.testing.assert_allclose(got[name], want[name], atol=1e-6, err_msg=name)
    assert not np.allclose(got["w"], 0.0)


@pytest.fixture
def program(write_module) -> str:
    return write_module("features_alone", PROGRAM)


@pytest.mark.parametrize("steps_per_run", [1, 2])
def test_a_dataset_of_features_alone_trains_and_evaluates_with_labels_none(
    program, tmp_path, run_train, steps_per_run
):
    import sys

    session = {"session": {"steps_per_run": steps_per_run}}
    want = _weights(_train(tmp_path, run_train, program, "pairs", "pairs_input_fn", **session).run_dir)
    seen = sys.modules[program].SEEN
    assert all(not none for _, none in seen)
    seen.clear()
    evaluation = {"data": {"eval_input_fn": f"{program}:eval_input_fn"},
                  "hooks": [{"type": "evaluation", "every_n_steps": 2}]}
    result = _train(tmp_path, run_train, program, "alone", "alone_input_fn", **session, **evaluation)
    _same(_weights(tmp_path / "alone"), want)
    if steps_per_run > 1:  # the windows stack the features alone (one carry variable per component: x, y)
        graph = (tmp_path / "alone" / "graph.pbtxt").read_text(encoding="utf-8")
        assert 'name: "hookrun/window_carry/1"' in graph and 'name: "hookrun/window_carry/2"' not in graph
    assert {"train", "eval"} <= {mode for mode, _ in seen} and all(none for _, none in seen), seen
    evaluations = result.evaluations
    assert [e["step"] for e in evaluations] == [2, 4, 6] and all(e["val_loss"] > 0 for e in evaluations)


def test_features_alone_nested_tuples_the_none_forms_and_towers(program, tmp_path, run_train):
    import sys

    want = _weights(_train(tmp_path, run_train, program, "pairs", "pairs_input_fn").run_dir)
    seen = sys.modules[program].SEEN
    seen.clear()
    _same(_weights(_train(tmp_path, run_train, program, "nested", "nested_input_fn").run_dir), want)
    _same(_weights(_train(tmp_path, run_train, program, "tensors", "tensors_input_fn").run_dir), want)
    # a dataset of (features, None), its windows stacked (steps_per_run 2)
    none = _train(tmp_path, run_train, program, "none", "none_input_fn", session={"steps_per_run": 2})
    _same(_weights(none.run_dir), want)
    assert 'name: "hookrun/window_carry/1"' in (none.run_dir / "graph.pbtxt").read_text(encoding="utf-8")
    # towers split the features alone (labels None in every tower), 4 rows a tower: the weights of one device
    towers = _train(tmp_path, run_train, program, "towers", "alone_input_fn", device=["cpu:0", "cpu:1"])
    _same(_weights(towers.run_dir), want)
    assert seen and all(none for _, none in seen), seen

    # validate --build and inspect describe the nested features and "labels: none"
    import tensorflow as tf

    from hookrun.runner.data.input_fn import describe_element, split_element

    features, labels = split_element(sys.modules[program].nested_input_fn().element_spec)
    rows = describe_element(tf, features, labels)
    assert [(row["name"], row["shape"]) for row in rows] == [
        ("features['x'][0]", "[8, 1]"), ("features['x'][1]", "[8, 1]"), ("features['y']", "[8, 1]"), ("labels", "-")
    ]


def test_a_built_in_builder_on_features_alone_is_refused_in_one_line(program, tmp_path):
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    path = _config(tmp_path, program, "builtin", "alone_input_fn", builder="linear_regressor")
    result = CliRunner().invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if f"{program}:alone_input_fn" in line]
    assert len(lines) == 1, output
    assert "features alone" in lines[0] and "linear_regressor needs labels" in lines[0], output
    assert "return (features, labels) pairs" in lines[0] and "labels=None" in lines[0], output


def _train(tmp_path: Path, run_train: Any, module: str, name: str, input_fn: str, **extra: Any) -> Any:
    """Train ``name`` into ``tmp_path/name`` for 6 steps; its TrainResult."""
    result = run_train(load_config(_config(tmp_path, module, name, input_fn, **extra)), run_dir=tmp_path / name)
    assert result.final_global_step == 6
    return result
