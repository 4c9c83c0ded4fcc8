"""``early_stopping`` through the real runner: stops after ``patience`` evaluations without gain, keeps the best."""

from __future__ import annotations

import json

import pytest
import tensorflow as tf

from hookrun.config_schemas.loader import ConfigError

#: A builder whose validation loss is ``(global_step - valley)^2``: it falls, bottoms out at ``valley``, then rises.
VALLEY_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    mse = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    if params["mode"] == "eval":
        step = tf.cast(v1.train.get_global_step(), tf.float32)
        mse = 0.0 * mse + tf.square(step - float(params["valley"]))
    return {"loss": tf.identity(mse, name="loss")}
"""

VALLEY = 10
EVERY = 2


def expected_stop(values: list[tuple[int, float]], patience: int, min_delta: float, mode: str) -> int | None:
    """The step at which a stop is due, replaying the rule on the recorded evaluations."""
    best, wait = None, 0
    for step, value in values:
        better = best is None or (value < best - min_delta if mode == "min" else value > best + min_delta)
        if better:
            best, wait = value, 0
        else:
            wait += 1
            if wait >= patience:
                return step
    return None


def valley_config(make_config, write_module, stopping: dict, last_step: int = 40, builder: str | None = None):
    builder = builder or write_module("valley", VALLEY_BUILDER)
    return make_config(
        graph={"builder": f"{builder}:build", "params": {"valley": VALLEY}},
        data={"validation_split": 0.25, "epochs": None},
        hooks=[
            {"type": "stop_at_step", "last_step": last_step},
            {"type": "evaluation", "every_n_steps": EVERY},
            {"type": "early_stopping", **stopping},
            {"type": "checkpoint_saver", "save_steps": 1000},
        ],
    )


@pytest.mark.parametrize(
    ("patience", "min_delta", "mode"),
    [(3, 0.0, "min"), (2, 0.0, "min"), (3, 5.0, "min"), (2, 0.0, "max")],
    ids=["patience-3", "patience-2", "min-delta", "mode-max"],
)
def test_stops_after_patience_evaluations_without_improvement(
    make_config, run_train, write_module, captured, patience, min_delta, mode
):
    loaded = valley_config(
        make_config, write_module, {"monitor": "val_loss", "patience": patience, "min_delta": min_delta, "mode": mode}
    )
    result = run_train(loaded)
    recorded = [(e["step"], e["val_loss"]) for e in result.evaluations]
    assert [v for _, v in recorded] == [float((s - VALLEY) ** 2) for s, _ in recorded]  # the builder did its job
    stop = expected_stop(recorded, patience, min_delta, mode)
    assert stop is not None and stop < 40
    assert result.final_global_step == stop
    assert recorded[-1][0] == stop  # the stop step was evaluated; no second evaluation at the end
    assert result.evaluations  # and the stop was requested by the hook, not the data
    assert not result.end_of_data
    word = "decreased" if mode == "min" else "increased"
    assert f"early stopping at step {stop}: val_loss has not {word}" in captured.text
    assert f"for {patience} evaluation(s)" in captured.text


def test_no_stop_while_improving(make_config, run_train, write_module):
    result = run_train(valley_config(make_config, write_module, {"patience": 3}, last_step=VALLEY))
    assert result.final_global_step == VALLEY
    assert "early stopping" not in str(result.notes)


def test_keep_best_saves_the_best_weights_and_a_resumed_run_keeps_them(make_config, run_train, write_module):
    stopping = {"patience": 50, "keep_best": True}
    builder = write_module("valley", VALLEY_BUILDER)
    first = run_train(valley_config(make_config, write_module, stopping, last_step=VALLEY + 2, builder=builder))
    best_dir = first.run_dir / "best"
    best = json.loads((best_dir / "best.json").read_text())
    values = [(e["step"], e["val_loss"]) for e in first.evaluations]
    best_step, best_value = min(values, key=lambda sv: sv[1])
    assert best == {"step": best_step, "monitor": "val_loss", "value": best_value} and best_step == VALLEY
    checkpoint = tf.train.latest_checkpoint(str(best_dir))
    assert checkpoint.endswith(f"model.ckpt-{best_step}")
    assert int(tf.train.load_variable(checkpoint, "global_step")) == best_step

    # Resumed: the evaluations get worse; the saved best is read back and not replaced.
    second = run_train(valley_config(make_config, write_module, stopping, last_step=VALLEY + 6, builder=builder))
    assert second.initial_step == VALLEY + 2 and second.evaluations
    assert json.loads((best_dir / "best.json").read_text())["step"] == best_step
    assert tf.train.latest_checkpoint(str(best_dir)).endswith(f"model.ckpt-{best_step}")


def test_unknown_monitor_for_a_custom_builder_fails_at_the_hook(make_config, run_train, write_module):
    loaded = valley_config(make_config, write_module, {"monitor": "val_rmse"})
    with pytest.raises(ConfigError) as info:
        run_train(loaded)
    assert "hooks[2]: monitor 'val_rmse' is not evaluated; the evaluation gives: val_loss" in str(info.value)


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_patience_survives_a_resume_without_keep_best(make_config, write_module, run_train, tmp_path, engine):
    """Stopped mid-patience and resumed, it stops where one uninterrupted run stops (hook state, issue 11)."""
    builder = write_module("valley", VALLEY_BUILDER)
    stopping = {"patience": 3, "keep_best": False}

    def config(last_step):
        loaded = valley_config(make_config, write_module, stopping, last_step=last_step, builder=builder)
        loaded.config.session.engine = engine
        return loaded

    whole = run_train(config(40), run_dir=tmp_path / "whole")
    stop = expected_stop([(e["step"], e["val_loss"]) for e in whole.evaluations], 3, 0.0, "min")
    assert stop is not None and whole.final_global_step == stop  # the valley: 16 (12, 14, 16 are no better than 10)
    first = run_train(config(stop - 2), run_dir=tmp_path / "resumed")  # two evaluations into the patience
    assert first.final_global_step == stop - 2
    assert (tmp_path / "resumed" / f"hook_state-{stop - 2}.json").exists()
    second = run_train(config(40), run_dir=tmp_path / "resumed")
    assert second.initial_step == stop - 2
    assert second.final_global_step == stop  # without the saved wait and best it would run 3 more evaluations
