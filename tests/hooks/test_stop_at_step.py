"""``stop_at_step`` through the real runner: an absolute last step, and ``num_steps`` counted from a restored step."""

from __future__ import annotations

import pytest


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


#: A hook restoring pretrained weights in ``after_create_session`` on its first session, ``global_step`` included
#: (as NVIDIA's MaskRCNN ``PretrainedWeightsLoadingHook`` without a skip pattern): it sets ``global_step`` to ``to``.
MOVES_GLOBAL_STEP = """
import tensorflow as tf

v1 = tf.compat.v1


class MoveGlobalStep(v1.train.SessionRunHook):
    def __init__(self, to):
        self._to = to
        self._done = False

    def begin(self):
        self._value = v1.placeholder(tf.int64, [])
        self._assign = v1.assign(v1.train.get_global_step(), self._value)

    def after_create_session(self, session, coord):
        if not self._done:
            session.run(self._assign, {self._value: self._to})
            self._done = True
"""

NOT_EXACTLY_ONE = "does not add exactly one"


@pytest.mark.parametrize("steps_per_run", [1, 5])
@pytest.mark.parametrize("clocked_first", [True, False], ids=["checkpoint_saver-first", "mover-first"])
def test_num_steps_counts_from_the_step_an_earlier_hook_moved_global_step_to(
    make_config, run_train, captured, write_module, steps_per_run, clocked_first
):
    """As TensorFlow's StopAtStepHook: num_steps counts from global_step read in its after_create_session,
    after the earlier hooks' (40 -> 52, not 0 -> 41), with no warning blaming the train op; a resume
    (a new hook: the mover sets 40 again) trains 40 -> 52 again."""
    module = write_module("moves", MOVES_GLOBAL_STEP)
    mover = {"type": "custom", "class": f"{module}:MoveGlobalStep", "args": {"to": 40}}
    saver = {"type": "checkpoint_saver", "save_steps": 1000}
    hooks = [saver, mover] if clocked_first else [mover, saver]
    hooks.append({"type": "stop_at_step", "num_steps": 12})
    loaded = make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": steps_per_run})
    for run in range(2):  # the second run resumes from the first's checkpoint at 52
        result = run_train(loaded)
        assert (result.steps, result.final_global_step) == (12, 52), run
    assert NOT_EXACTLY_ONE not in captured.text


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_last_step_holds_when_a_later_hook_moves_global_step(make_config, run_train, captured, write_module,
                                                            steps_per_run):
    """stop_at_step first, the mover after it: TensorFlow stops at last_step 42 after two steps from 40.
    Under N = 5 the first window is worked out from 40, not from the 0 read before the mover ran."""
    module = write_module("moves", MOVES_GLOBAL_STEP)
    hooks = [
        {"type": "stop_at_step", "last_step": 42},
        {"type": "custom", "class": f"{module}:MoveGlobalStep", "args": {"to": 40}},
    ]
    result = run_train(make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": steps_per_run}))
    assert (result.steps, result.final_global_step) == (2, 42)
    assert NOT_EXACTLY_ONE not in captured.text


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_num_steps_before_the_mover_counts_from_the_step_it_read(make_config, run_train, write_module,
                                                                steps_per_run):
    """stop_at_step(num_steps: 3) before the mover: TensorFlow fixes last_step 0 + 3 = 3 in its
    after_create_session; the mover then sets 40, and the first step (41) is past it: one step."""
    module = write_module("moves", MOVES_GLOBAL_STEP)
    hooks = [
        {"type": "stop_at_step", "num_steps": 3},
        {"type": "custom", "class": f"{module}:MoveGlobalStep", "args": {"to": 40}},
    ]
    result = run_train(make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": steps_per_run}))
    assert (result.steps, result.final_global_step) == (1, 41)
