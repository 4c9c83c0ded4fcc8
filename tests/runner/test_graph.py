"""The graph: the builder called for training and for evaluation (shared weights, its params), learning-rate decay."""

from __future__ import annotations

from pathlib import Path

import pytest
import tensorflow as tf
from rich.console import Console

from hookrun.config_schemas.loader import ConfigError
from tests.conftest import user_module

#: A builder recording the params of each call, with weights from get_variable (shared) or tf.Variable (not).
RECORDING_BUILDER = """
import tensorflow as tf

CALLS = []


def build(features, labels, params):
    CALLS.append(dict(params))
    v1 = tf.compat.v1
    if params.get("fresh_variables") and params["mode"] == "eval":
        w = tf.Variable(tf.zeros([int(features.shape[-1]), 1]), name="w_fresh")
    else:
        w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    mse = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    return {"loss": tf.identity(mse, name="loss"), "metrics": {"mse2": 2 * mse}}
"""

EVALUATION = {"type": "evaluation", "every_n_steps": 4}


def prepared_run(loaded, tmp_path: Path):
    # Imported here, as the tests do: the module loads only with the test that needs it.
    from hookrun.runner.training.prepare import prepare

    return prepare(loaded, tmp_path / "run", Console(quiet=True))


def test_builder_is_called_for_train_and_eval_with_shared_weights(make_config, write_module, tmp_path):
    builder = write_module("recording", RECORDING_BUILDER)
    loaded = make_config(
        graph={"builder": f"{builder}:build", "params": {"k": 1}},
        data={"validation_split": 0.25, "label_scale": 4},
        hooks=[EVALUATION],
    )
    prepared = prepared_run(loaded, tmp_path)
    calls = user_module(builder).CALLS
    assert calls == [
        {"k": 1, "label_scale": 4.0, "mode": "train"},
        {"k": 1, "label_scale": 4.0, "mode": "eval"},
    ]
    with prepared.built.graph.as_default():
        assert [v.op.name for v in tf.compat.v1.trainable_variables()] == ["w"]
    evaluation = prepared.built.evaluation
    # Without eval_metrics, each batch metric is averaged over the evaluation.
    assert list(evaluation.values) == ["val_loss", "val_mse2"]
    assert evaluation.num_rows == 16 and evaluation.num_batches == 2


def test_no_evaluation_graph_without_an_evaluation_hook(make_config, write_module, tmp_path):
    builder = write_module("recording", RECORDING_BUILDER)
    loaded = make_config(graph={"builder": f"{builder}:build"}, data={"validation_split": 0.25})
    assert prepared_run(loaded, tmp_path).built.evaluation is None
    assert [c["mode"] for c in user_module(builder).CALLS] == ["train"]


def test_a_builder_that_makes_new_weights_for_evaluation_is_refused(make_config, write_module, tmp_path):
    builder = write_module("recording", RECORDING_BUILDER)
    loaded = make_config(
        graph={"builder": f"{builder}:build", "params": {"fresh_variables": True}},
        data={"validation_split": 0.25},
        hooks=[EVALUATION],
    )
    with pytest.raises(ConfigError, match="in eval mode reads the variable .w_fresh., which its train-mode") as info:
        prepared_run(loaded, tmp_path)
    (issue,) = info.value.issues
    assert issue.path == "graph.builder" and issue.line is not None


def test_dropout_only_in_the_training_graph(make_config, tmp_path):
    loaded = make_config(
        graph={"builder": "dnn_regressor", "params": {"hidden_units": [4, 4], "dropout": 0.5}},
        data={"validation_split": 0.25},
        hooks=[EVALUATION],
    )
    graph = prepared_run(loaded, tmp_path).built.graph
    dropout_ops = [op.name for op in graph.get_operations() if "dropout" in op.name and op.type == "Mul"]
    assert dropout_ops and not any(name.startswith("evaluation/") for name in dropout_ops)


@pytest.mark.parametrize("builder", ["linear_regressor", "dnn_regressor", "linear_classifier", "dnn_classifier"])
def test_builtin_builders_build_both_graphs(make_config, tmp_path, builder):
    data = {"validation_split": 0.25}
    if "classifier" in builder:
        rows = "".join(f"{i},{i % 3},{'abc'[i % 3]}\n" for i in range(24))
        (tmp_path / "classes.csv").write_text("a,b,y\n" + rows, encoding="utf-8")
        data["train"] = "classes.csv"
    params = {"n_classes": 3} if "classifier" in builder else {}
    loaded = make_config(graph={"builder": builder, "params": params}, data=data, hooks=[EVALUATION])
    built = prepared_run(loaded, tmp_path).built
    expected = ["val_loss", "val_accuracy"] if "classifier" in builder else ["val_loss", "val_rmse", "val_mae"]
    assert list(built.evaluation.values) == expected
    assert {"loss", "global_step", "predictions", "learning_rate"} <= set(built.named)


def test_learning_rate_decay_follows_exponential_decay(make_config, run_train):
    rate, decay_steps, decay_rate = 0.05, 2, 0.5
    result = run_train(
        make_config(
            graph={
                "optimizer": {
                    "name": "sgd",
                    "learning_rate": rate,
                    "decay": {"decay_steps": decay_steps, "decay_rate": decay_rate, "staircase": True},
                }
            },
            hooks=[
                {"type": "stop_at_step", "last_step": 6},
                {"type": "history_saver", "every_n_step": 1, "metrics": ["learning_rate"]},
            ],
        )
    )
    # The rate of the step that took global_step from s-1 to s: decay applied at s-1.
    for row in result.history:
        expected = rate * decay_rate ** ((row["step"] - 1) // decay_steps)
        assert row["learning_rate"] == pytest.approx(expected, rel=1e-6)
