"""``logging_tensor`` through the real runner: its lines reach the console."""

from __future__ import annotations

import math
import re


def test_logs_the_loss_every_n_iter(make_config, run_train, captured):
    every_n_iter, last_step = 2, 7
    run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "logging_tensor", "tensors": ["loss"], "every_n_iter": every_n_iter},
            ]
        )
    )
    lines = [line for line in captured.text.splitlines() if line.startswith("loss = ")]
    # LoggingTensorHook logs on local iterations 0, n, 2n, ...
    assert len(lines) == len(range(0, last_step, every_n_iter)), captured.text
    values = [float(re.match(r"loss = (\S+)", line).group(1)) for line in lines]
    assert all(math.isfinite(v) for v in values)


def test_labels_name_the_logged_tensors(make_config, run_train, captured):
    run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": 2},
                {"type": "logging_tensor", "tensors": {"error": "rmse", "step": "global_step"}, "at_end": True},
            ]
        )
    )
    lines = [line for line in captured.text.splitlines() if "error = " in line]
    assert len(lines) == 1, captured.text  # at_end: once, at the end only
    assert "step = 2" in lines[0]
