"""``stop_at_step`` through the real runner: an absolute last step, and ``num_steps`` counted from a restored step."""

from __future__ import annotations


def test_last_step_stops_at_that_global_step(make_config, run_train):
    last_step = 7
    result = run_train(make_config(hooks=[{"type": "stop_at_step", "last_step": last_step}]))
    assert result.final_global_step == last_step
    assert result.steps == last_step
    assert not result.end_of_data  # the data had more: 64 rows x 10 epochs / 8 = 80 steps


def test_num_steps_counts_from_the_restored_step(make_config, run_train):
    saver = {"type": "checkpoint_saver", "save_steps": 1000}
    first = run_train(make_config(hooks=[{"type": "stop_at_step", "last_step": 5}, saver]))
    assert first.final_global_step == 5

    num_steps = 3
    second = run_train(make_config(hooks=[{"type": "stop_at_step", "num_steps": num_steps}, saver]))
    assert second.initial_step == first.final_global_step
    assert second.steps == num_steps
    assert second.final_global_step == first.final_global_step + num_steps
