"""``evaluation`` through the real runner: full-set metrics equal numpy's, the schedule, history columns, summaries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hookrun.hooks.history_saver.hook import read_history
from hookrun.runner.data.reader import split_rows
from tests.conftest import NUM_ROWS, event_scalars, user_module

#: A hook that, at ``end``, runs the validation set through the graph's evaluation pipeline and keeps
#: every prediction and label (placed after the evaluation hook: same weights as its last evaluation).
CAPTURE = """
import numpy as np
import tensorflow as tf

CAPTURED = {}


class Capture(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        graph = tf.compat.v1.get_default_graph()
        self.reset = graph.get_operation_by_name("evaluation/reset")
        self.fetch = [
            graph.get_tensor_by_name("evaluation/outputs/predictions:0"),
            graph.get_tensor_by_name("evaluation/outputs/labels:0"),
        ]
        self.global_step = tf.compat.v1.train.get_global_step()
        self.after_runs = 0

    def after_run(self, run_context, run_values):
        self.after_runs += 1
        CAPTURED["after_runs"] = self.after_runs

    def end(self, session):
        session.run(self.reset)
        predictions, labels, sizes = [], [], []
        while True:
            try:
                p, l = session.run(self.fetch)
            except tf.errors.OutOfRangeError:
                break
            predictions.append(np.asarray(p).reshape(len(l), -1))
            labels.append(l)
            sizes.append(len(l))
        CAPTURED["predictions"] = np.concatenate(predictions)
        CAPTURED["labels"] = np.concatenate(labels)
        CAPTURED["batch_sizes"] = sizes
        CAPTURED["step"] = int(session.run(self.global_step))
"""

VAL_SPLIT = 0.3
VAL_ROWS = len(split_rows(NUM_ROWS, VAL_SPLIT, 0)[1])  # 17 (the hash split): not a multiple of the batch size (8)


def evaluation_hook(every: int = 4, **extra):
    return {"type": "evaluation", "every_n_steps": every, **extra}


def test_full_set_metrics_equal_numpy_on_the_graphs_predictions(make_config, run_train, write_module):
    """val_loss, val_rmse, val_mae over the whole validation set, in label units (label_scale), dropout off."""
    scale = 10.0
    capture = write_module("capture", CAPTURE)
    loaded = make_config(
        graph={"builder": "dnn_regressor", "params": {"hidden_units": [8], "dropout": 0.5}},
        data={"validation_split": VAL_SPLIT, "label_scale": scale, "epochs": 3},
        hooks=[evaluation_hook(every=5), {"type": "custom", "class": f"{capture}:Capture"}],
    )
    result = run_train(loaded)
    captured = user_module(capture).CAPTURED
    assert captured["batch_sizes"] == [8, 8, VAL_ROWS - 16]
    assert captured["step"] == result.final_global_step == result.evaluations[-1]["step"]

    predictions = captured["predictions"][:, 0]  # label units
    labels = captured["labels"][:, 0] * scale  # training units -> label units
    error = predictions.astype(np.float64) - labels
    last = result.evaluations[-1]
    assert last["val_rmse"] == pytest.approx(np.sqrt(np.mean(error**2)), rel=1e-4)
    assert last["val_mae"] == pytest.approx(np.mean(np.abs(error)), rel=1e-4)
    assert last["val_loss"] == pytest.approx(np.mean((error / scale) ** 2), rel=1e-4)  # training units, no l2
    # Not the mean of per-batch values: with a short last batch those differ.
    batch_rmse = [np.sqrt(np.mean(e**2)) for e in np.split(error, [8, 16])]
    assert abs(np.mean(batch_rmse) - last["val_rmse"]) > 1e-4 * last["val_rmse"]
    # Evaluation runs on the raw session: no hook saw extra steps.
    assert captured["after_runs"] == result.final_global_step


def test_schedule_history_columns_and_summaries(make_config, run_train, captured):
    result = run_train(
        make_config(
            data={"validation_split": VAL_SPLIT},
            hooks=[
                {"type": "stop_at_step", "last_step": 10},
                evaluation_hook(every=4),
                {"type": "history_saver", "every_n_step": 2, "metrics": ["rmse"]},
            ],
        )
    )
    assert [e["step"] for e in result.evaluations] == [4, 8, 10]  # every 4 steps, and at the end
    assert result.history_columns == ["step", "mean_loss", "total_loss", "rmse", "val_loss", "val_rmse", "val_mae"]
    by_step = {row["step"]: row for row in result.history}
    for evaluation in result.evaluations:
        for name in ("val_loss", "val_rmse", "val_mae"):
            assert by_step[evaluation["step"]][name] == pytest.approx(evaluation[name])
    for step in (2, 6):
        assert by_step[step]["val_loss"] is None
    on_disk = {row["step"]: row for row in read_history(result.run_dir / "history.csv")}
    assert on_disk[6]["val_rmse"] is None and on_disk[8]["val_rmse"] == pytest.approx(by_step[8]["val_rmse"])
    assert (result.run_dir / "history.csv").read_text().splitlines()[3].endswith(",,,")  # step 6: empty cells

    for tag in ("loss", "rmse", "mae"):
        scalars = event_scalars(result.run_dir / "eval", tag)
        assert [step for step, _ in scalars] == [4, 8, 10]
    assert event_scalars(result.run_dir / "eval", "rmse")[-1][1] == pytest.approx(result.evaluations[-1]["val_rmse"])
    assert "evaluation at step 8: val_loss" in captured.text


def test_history_listed_before_evaluation_still_gets_the_values(make_config, run_train):
    result = run_train(
        make_config(
            data={"validation_split": VAL_SPLIT},
            hooks=[
                {"type": "history_saver", "every_n_step": 3},
                {"type": "stop_at_step", "last_step": 7},
                evaluation_hook(every=3),
            ],
        )
    )
    assert [e["step"] for e in result.evaluations] == [3, 6, 7]
    rows = {row["step"]: row for row in read_history(result.run_dir / "history.csv")}
    assert list(rows) == [3, 6, 7]
    for evaluation in result.evaluations:
        assert rows[evaluation["step"]]["val_loss"] == pytest.approx(evaluation["val_loss"], rel=1e-6)


@pytest.mark.parametrize(("last_step", "at_end", "expected"), [(8, True, [4, 8]), (10, False, [4, 8])])
def test_no_second_evaluation_at_the_end(make_config, run_train, last_step, at_end, expected):
    result = run_train(
        make_config(
            data={"validation_split": VAL_SPLIT},
            hooks=[{"type": "stop_at_step", "last_step": last_step}, evaluation_hook(every=4, at_end=at_end)],
        )
    )
    assert [e["step"] for e in result.evaluations] == expected


def test_every_n_secs(make_config, run_train):
    result = run_train(
        make_config(
            data={"validation_split": VAL_SPLIT},
            hooks=[{"type": "stop_at_step", "last_step": 5}, {"type": "evaluation", "every_n_secs": 1e-6}],
        )
    )
    steps = [e["step"] for e in result.evaluations]
    assert steps == sorted(set(steps)) and steps[-1] == 5 and len(steps) >= 2


CLASSES_CSV_ROWS = 80


def test_classifier_accuracy_and_auc_equal_numpy(tmp_path, make_config, run_train, write_module):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=CLASSES_CSV_ROWS), rng.normal(size=CLASSES_CSV_ROWS)
    kind = np.where(a + 0.5 * b + rng.normal(scale=0.7, size=CLASSES_CSV_ROWS) > 0, "up", "down")
    lines = [f"{x:.5f},{y:.5f},{k}" for x, y, k in zip(a, b, kind, strict=True)]
    (tmp_path / "classes.csv").write_text("a,b,kind\n" + "\n".join(lines) + "\n", encoding="utf-8")
    capture = write_module("capture", CAPTURE)
    result = run_train(
        make_config(
            graph={"builder": "linear_classifier", "params": {"n_classes": 2}},
            data={"train": "classes.csv", "label": "kind", "validation_split": 0.25, "epochs": 5},
            hooks=[evaluation_hook(every=100), {"type": "custom", "class": f"{capture}:Capture"}],
        )
    )
    last = result.evaluations[-1]
    assert set(last) == {"step", "val_loss", "val_accuracy", "val_auc"}
    got = user_module(capture).CAPTURED
    predicted, labels = got["predictions"][:, 0], got["labels"][:, 0]
    assert last["val_accuracy"] == pytest.approx(np.mean(predicted == labels), rel=1e-6)
    assert 0.5 < last["val_auc"] <= 1.0
    assert math.isfinite(last["val_loss"])
