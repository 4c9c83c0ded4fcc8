"""``summary_saver`` through the real runner: a ``loss`` scalar in the run directory's event file."""

from __future__ import annotations

import math

from tests.conftest import event_scalars


def test_writes_loss_scalars_every_save_steps(make_config, run_train):
    save_steps, last_step = 2, 7
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "summary_saver", "save_steps": save_steps},
            ]
        )
    )
    scalars = event_scalars(result.run_dir / "train", "loss")
    # SummarySaverHook writes on the first step, then whenever save_steps global steps have passed.
    assert [step for step, _ in scalars] == list(range(1, last_step + 1, save_steps))
    assert all(math.isfinite(value) and value >= 0 for _, value in scalars)


def test_output_dir_is_relative_to_the_run_dir(make_config, run_train):
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": 3},
                {"type": "summary_saver", "save_steps": 1, "tensors": ["rmse"], "output_dir": "events"},
            ]
        )
    )
    assert [step for step, _ in event_scalars(result.run_dir / "events", "rmse")] == [1, 2, 3]
    assert not event_scalars(result.run_dir, "rmse")  # the top level holds only the run's HParams
    assert not event_scalars(result.run_dir / "train", "rmse")  # nor the default place (TRAIN_EVENT_DIR)


def event_histograms(directory, tag):
    """``(step, num, sum)`` of every histogram summary ``tag`` in the event files of ``directory``."""
    import tensorflow as tf

    found = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.tag == tag and value.HasField("histo"):
                    found.append((int(event.step), value.histo.num, value.histo.sum))
    return sorted(found)


def test_a_non_scalar_tensor_becomes_a_histogram(make_config, run_train):
    # The linear regressor's weights are [2, 1]: a scalar summary of them fails at step 1.
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": 3},
                {"type": "summary_saver", "save_steps": 1, "tensors": ["loss", "linear/kernel"]},
            ]
        )
    )
    histograms = event_histograms(result.run_dir / "train", "linear/kernel")
    assert [step for step, _, _ in histograms] == [1, 2, 3]
    assert all(num == 2 for _, num, _ in histograms)  # two weights: a [2, 1] kernel
    assert [step for step, _ in event_scalars(result.run_dir / "train", "loss")] == [1, 2, 3]


def test_a_variable_is_read_not_fetched_as_its_handle(make_config, run_train):
    import tensorflow as tf

    last_step = 3
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "summary_saver", "save_steps": 1, "tensors": ["linear/bias", "global_step:0"]},
                {"type": "checkpoint_saver", "save_steps": 1, "max_to_keep": 10},
            ]
        )
    )
    # The bias at each checkpoint (steps 0..3): the summary reads it in the same run as the train op,
    # so it holds the value before or after that step's update.
    saved = {
        step: float(tf.train.load_variable(str(result.run_dir / f"model.ckpt-{step}"), "linear/bias").sum())
        for step in range(last_step + 1)
    }
    assert len(set(saved.values())) == last_step + 1  # the bias moves every step: the check below can fail
    bias = event_histograms(result.run_dir / "train", "linear/bias")
    assert [step for step, _, _ in bias] == [1, 2, 3]
    for step, num, total in bias:
        assert num == 1
        assert any(math.isclose(total, saved[s], rel_tol=1e-5, abs_tol=1e-7) for s in (step - 1, step)), (step, saved)
    # global_step:0 is the variable's resource handle; its value is read: a scalar.
    steps = event_scalars(result.run_dir / "train", "global_step_0")
    assert [step for step, _ in steps] == [1, 2, 3]
    assert all(value in (step - 1, step) for step, value in steps)


def test_a_non_numeric_tensor_is_a_located_config_error(make_config, run_train, tmp_path):
    import pytest

    from hookrun.config_schemas.loader import ConfigError

    with pytest.raises(ConfigError) as info:
        run_train(
            make_config(
                hooks=[
                    {"type": "stop_at_step", "last_step": 2},
                    {
                        "type": "summary_saver",
                        "save_steps": 1,
                        "tensors": ["loss", "hookrun/input/IteratorToStringHandle:0"],
                    },
                ]
            )
        )
    (issue,) = info.value.issues
    assert issue.path == "hooks[1]" and issue.line is not None
    assert "'hookrun/input/IteratorToStringHandle:0' is a string tensor" in issue.message
    assert not (tmp_path / "run").exists()
