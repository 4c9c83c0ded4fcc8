"""``step_counter`` through the real runner: ``global_step/sec`` in an event file and on the console."""

from __future__ import annotations

from tests.conftest import event_scalars


def test_records_global_step_per_sec(make_config, run_train, captured):
    every_n_steps, last_step = 5, 12
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "step_counter", "every_n_steps": every_n_steps},
            ]
        )
    )
    scalars = event_scalars(result.run_dir / "train", "global_step/sec")
    # StepCounterHook starts its clock on the first step and measures every every_n_steps after it.
    assert [step for step, _ in scalars] == list(range(1 + every_n_steps, last_step + 1, every_n_steps))
    assert all(value > 0 for _, value in scalars)
    assert captured.text.count("global_step/sec: ") == len(scalars)
