"""The one "did you mean": prefix and word matches before edit distance (issue 13, items 5 and 16)."""

from __future__ import annotations

from hookrun.common.suggest import closest, did_you_mean
from hookrun.config_schemas.builders import builtin_eval_metrics
from hookrun.hooks.early_stopping import EarlyStoppingConfig


def test_a_shortened_name_finds_its_full_form_before_a_near_miss() -> None:
    names = ["val_loss", "val_auc", "val_accuracy"]
    assert closest("val_acc", names) == ["val_accuracy"]
    assert did_you_mean("val_acc", names) == "; did you mean `val_accuracy`?"


def test_reordered_words_and_case_are_found() -> None:
    assert closest("loss_val", ["val_loss", "val_rmse"]) == ["val_loss"]
    assert closest("Val_Loss", ["val_loss", "val_rmse"]) == ["val_loss"]


def test_plain_typos_still_use_edit_distance_and_nothing_close_gives_nothing() -> None:
    assert closest("lienar_regressor", ["linear_regressor", "dnn_regressor"]) == ["linear_regressor"]
    assert closest("zz", ["val_loss", "val_rmse"]) == []
    assert did_you_mean("zz", ["val_loss"]) == ""
    assert closest("a", ["abc"]) == []  # a one-letter prefix is no evidence


def test_repr_quoting_for_data_columns() -> None:
    assert did_you_mean("ag", ["age", "income"], quote="'") == "; did you mean 'age'?"


def test_early_stopping_monitor_val_acc_suggests_val_accuracy() -> None:
    """The reported case: a binary classifier evaluates val_loss, val_accuracy, val_auc."""
    metrics = builtin_eval_metrics("linear_classifier", {"n_classes": 2})
    names = ["val_loss", *(f"val_{m}" for m in metrics or [])]
    problem = EarlyStoppingConfig(type="early_stopping", monitor="val_acc").unknown_monitor(names, "linear_classifier")
    assert problem is not None and problem.endswith("did you mean `val_accuracy`?"), problem
    assert EarlyStoppingConfig(type="early_stopping", monitor="val_auc").unknown_monitor(names) is None
