"""``global_step_waiter`` through the real runner.

Only ``wait_until_step: 0`` is tested: on a single worker nothing else advances
``global_step``, so any value above the current step would block forever
(TensorFlow's hook polls every 0.5 s with no timeout); that is by design.
"""

from __future__ import annotations


def test_wait_until_step_zero_does_not_wait(make_config, run_train):
    last_step = 4
    result = run_train(
        make_config(
            hooks=[
                {"type": "global_step_waiter", "wait_until_step": 0},
                {"type": "stop_at_step", "last_step": last_step},
            ]
        )
    )
    assert result.final_global_step == last_step
    assert result.loop_seconds < 5  # the hook polls in 0.5 s sleeps when it waits
