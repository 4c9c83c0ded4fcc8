"""Every number in a config has the bound TensorFlow or the OS can honour (``config_schemas/bounds.py``).

``tests/bad_configs/value_*_beyond_*`` and friends check that ``validate`` refuses values past a
bound; here, a config with every bound at its largest allowed value trains for real.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hookrun.config_schemas import bounds
from hookrun.config_schemas.loader import ConfigError, LoadedConfig


def test_every_bound_at_its_largest_value_trains(make_config: Callable[..., LoadedConfig], run_train: Any) -> None:
    steps = bounds.INT64_MAX
    loaded = make_config(
        graph={
            "optimizer": {"name": "sgd", "learning_rate": 0.05, "decay": {"decay_steps": steps, "decay_rate": 0.5}},
        },
        data={"epochs": steps, "seed": bounds.MAX_SEED, "batch_size": 8},
        device=f"gpu:{bounds.MAX_GPU_INDEX}",
        session={
            "allow_soft_placement": True,
            "intra_op_parallelism_threads": bounds.MAX_THREADS,
            "inter_op_parallelism_threads": bounds.MAX_THREADS,
        },
        hooks=[
            {"type": "progress_bar", "refresh_secs": bounds.MAX_SECONDS, "total": steps},
            {"type": "stop_at_step", "num_steps": steps},
            {"type": "stop_at_step", "last_step": 12},
            {"type": "step_counter", "every_n_steps": steps},
            {"type": "summary_saver", "save_steps": steps},
            {"type": "history_saver", "every_n_step": steps},
            {"type": "checkpoint_saver", "save_steps": steps, "max_to_keep": bounds.INT32_MAX},
            {"type": "checkpoint_saver", "save_secs": bounds.MAX_SECONDS, "checkpoint_dir": "other"},
        ],
    )
    result = run_train(loaded)
    assert result.final_global_step == 12
    assert Path(result.checkpoint_path).name == "model.ckpt-12"


@pytest.mark.parametrize(
    ("section", "values"),
    [
        ("data", {"epochs": bounds.INT64_MAX + 1}),
        ("data", {"seed": bounds.MAX_SEED + 1}),
        ("data", {"batch_size": bounds.INT32_MAX + 1}),
        ("session", {"intra_op_parallelism_threads": bounds.MAX_THREADS + 1}),
        ("device", f"gpu:{bounds.MAX_GPU_INDEX + 1}"),
        ("hooks", [{"type": "stop_at_step", "last_step": bounds.INT64_MAX + 1}]),
        ("hooks", [{"type": "logging_tensor", "tensors": ["loss"], "every_n_secs": bounds.MAX_SECONDS * 2}]),
    ],
)
def test_one_past_a_bound_is_refused(make_config: Callable[..., LoadedConfig], section: str, values: Any) -> None:
    with pytest.raises(ConfigError, match="must be at most|GPU index is at most"):
        make_config(**{section: values})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"label_scale": 1e39}, "must be at most 1e+18"),  # inf in float32: val_rmse inf, exit 0
        ({"label_scale": 1e-39}, "must be at least 1e-18"),
        ({"label_scale": float("inf")}, "must be"),
        ({"validation_split": 0.999999999}, "must be at most 0.999999"),
        ({"validation_split": 1e-9}, "must be at least 1e-06"),
    ],
)
def test_a_number_the_run_cannot_honour_is_refused(make_config: Callable[..., LoadedConfig], values: Any,
                                                   message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        make_config(data=values)


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    return CliRunner().invoke(app, list(args))


def test_validate_refuses_the_split_train_refuses(make_config: Callable[..., LoadedConfig], tmp_path: Path) -> None:
    """``validation_split: 0.9999`` of 64 rows passed validate; train then refused it (no training row)."""
    make_config(data={"validation_split": 0.9999})
    config = str(tmp_path / "config.yaml")
    validated = _cli("validate", config)
    trained = _cli("train", config, "--run-dir", str(tmp_path / "run"))
    assert validated.exit_code == trained.exit_code == 2, (validated.output, trained.output)
    line = "data.validation_split: validation_split 0.9999 of 64 row(s) leaves no training rows"
    assert line in validated.output and line in trained.output, (validated.output, trained.output)
    assert not (tmp_path / "run").exists()
    make_config(data={"validation_split": 0.5})
    assert _cli("validate", config).exit_code == 0


def test_layers_tensorflow_cannot_hold_are_refused_before_tensorflow(make_config: Callable[..., LoadedConfig],
                                                                    tmp_path: Path) -> None:
    """``hidden_units: [2147483647]`` passed validate; train was killed (exit 137/139) minutes later."""
    make_config(graph={"builder": "dnn_regressor", "params": {"hidden_units": [bounds.INT32_MAX]}})
    result = _cli("validate", str(tmp_path / "config.yaml"))
    assert result.exit_code == 2, result.output
    assert ("graph.params.hidden_units: layer 0 (2 x 2,147,483,647) has 4,294,967,294 weights, more than a "
            "TensorFlow tensor holds") in result.output, result.output
    result = _cli("train", str(tmp_path / "config.yaml"), "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 2 and "layer 0 (2 x 2,147,483,647)" in result.output, result.output


def test_weights_beyond_the_machine_s_memory_are_refused() -> None:
    from hookrun.common.errors import DataError
    from hookrun.config_schemas.graph import GraphConfig
    from hookrun.runner.preflight import check_model_size

    graph = GraphConfig(builder="dnn_classifier", params={"hidden_units": [40_000, 40_000], "n_classes": 3})
    check_model_size(graph, 13, memory=32 << 30)  # 1.6e9 weights: 25 GiB with slots
    with pytest.raises(DataError, match=r"1,600,720,003 weights \(13 features in\) need about 23.9 GiB") as info:
        check_model_size(graph, 13, memory=16 << 30)
    assert info.value.loc == ("graph", "params", "hidden_units")
    with pytest.raises(DataError, match="the output layer"):
        check_model_size(GraphConfig(builder="linear_classifier", params={"n_classes": 2**30}), 3, memory=1 << 60)


#: A linear regressor whose batch metric ``overflow`` is ``inf`` (float32): its evaluation averages it.
OVERFLOW_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    mse = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    return {"loss": tf.identity(mse, name="loss"), "metrics": {"overflow": (mse + 1.0) * 1e38 * 10.0}}
"""


def test_a_non_finite_final_evaluation_fails_the_run(make_config: Callable[..., LoadedConfig], run_train: Any,
                                                     write_module: Callable[[str, str], str], tmp_path: Path) -> None:
    """The run reported ``val_rmse inf`` and exited 0 ("finished")."""
    import json

    from hookrun.common.errors import TrainingError

    module = write_module("overflow", OVERFLOW_BUILDER)
    loaded = make_config(
        graph={"builder": f"{module}:build"}, data={"validation_split": 0.25},
        hooks=[{"type": "stop_at_step", "num_steps": 4}, {"type": "evaluation", "every_n_steps": 2, "log": False},
               {"type": "checkpoint_saver", "save_steps": 2}],
    )
    with pytest.raises(TrainingError, match=r"the last evaluation \(step 4\) is not finite: val_overflow inf"):
        run_train(loaded)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "failed" and "val_overflow inf" in summary["error"], summary
    assert summary["final_global_step"] == 4 and summary["validation"]["step"] == 4  # the values are kept
    assert (tmp_path / "run" / "model.ckpt-4.index").exists()


def test_a_numpy_float32_or_nan_final_value_counts_as_not_finite() -> None:
    import numpy as np

    from hookrun.runner.training.result import non_finite_evaluation

    assert "val_loss inf" in non_finite_evaluation([{"step": 4, "val_loss": np.float32("inf"), "val_rows": 3}])
    assert "val_mae nan" in non_finite_evaluation([{"step": 2, "val_mae": 1.0}, {"step": 4, "val_mae": float("nan")}])
    assert non_finite_evaluation([{"step": 2, "val_mae": float("inf")}, {"step": 4, "val_mae": 0.5}]) is None
    assert non_finite_evaluation([]) is None


def test_a_label_scale_whose_training_labels_overflow_is_refused(make_config: Callable[..., LoadedConfig],
                                                                  tmp_path: Path) -> None:
    """Labels of 1,000 with ``label_scale: 1e-18`` are 1e21 in training: an ``inf`` loss from the first step."""
    from tests.conftest import linear_rows, write_csv

    rows = linear_rows()
    rows[:, 2] = 1000.0 + np.arange(len(rows))
    write_csv(tmp_path / "data.csv", rows)
    make_config(data={"label_scale": 1e-18})
    config = str(tmp_path / "config.yaml")
    for args in (["validate", config], ["train", config, "--run-dir", str(tmp_path / "run")]):
        result = _cli(*args)
        assert result.exit_code == 2, result.output
        assert ("data.label_scale: label_scale 1e-18: a label of 1063 becomes 1.06e+21 in training, whose square "
                "overflows float32") in result.output, result.output
    make_config(data={"label_scale": 1e-16})
    assert _cli("validate", config).exit_code == 0


def test_the_largest_label_scale_trains_to_finite_metrics(make_config: Callable[..., LoadedConfig],
                                                          run_train: Any) -> None:
    loaded = make_config(
        data={"label_scale": bounds.MAX_LABEL_SCALE, "validation_split": 0.25},
        hooks=[{"type": "stop_at_step", "num_steps": 4}, {"type": "evaluation", "every_n_steps": 2, "log": False}],
    )
    result = run_train(loaded)
    last = result.evaluations[-1]
    assert last["step"] == 4 and all(np.isfinite(v) for k, v in last.items() if k.startswith("val_")), last
