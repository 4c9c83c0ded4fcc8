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
    scalars = event_scalars(result.run_dir, "loss")
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
    assert not list(result.run_dir.glob("events.out.tfevents.*"))
