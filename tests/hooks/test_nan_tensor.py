"""``nan_tensor`` through the real runner, with a builder whose loss turns NaN at a known step."""

from __future__ import annotations

import pytest

from hookrun.common.errors import TrainingError
from tests.conftest import BATCH_SIZE, NAN_BUILDER, NUM_ROWS

#: The loss is NaN once global_step (read before the step's increment) reaches this: global step NAN_FROM + 1.
NAN_FROM = 3


@pytest.fixture
def nan_graph(write_module):
    return {"builder": f"{write_module('mybuilder', NAN_BUILDER)}:build", "params": {"nan_from": NAN_FROM}}


def test_nan_loss_fails_naming_the_step(make_config, run_train, nan_graph, tmp_path):
    loaded = make_config(graph=nan_graph, hooks=[{"type": "nan_tensor"}])
    with pytest.raises(TrainingError) as info:
        run_train(loaded)
    assert str(info.value).startswith(f"NaN loss at step {NAN_FROM + 1}"), str(info.value)
    assert info.value.exit_code == 1


def test_nan_loss_without_fail_stops_before_the_data_ends(make_config, run_train, nan_graph, captured):
    epochs = 10
    loaded = make_config(
        graph=nan_graph, data={"epochs": epochs}, hooks=[{"type": "nan_tensor", "fail_on_nan_loss": False}]
    )
    result = run_train(loaded)
    assert result.final_global_step == NAN_FROM + 1
    assert not result.end_of_data
    assert result.final_global_step < NUM_ROWS * epochs // BATCH_SIZE
    assert "Model diverged with loss = NaN" in captured.text
