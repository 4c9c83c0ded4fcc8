"""``checkpoint_saver`` through the real runner: when it saves, ``max_to_keep``, and no extra Session.run per step."""

from __future__ import annotations

import re

import pytest
import tensorflow as tf

from tests.conftest import user_module


def checkpoint_steps(run_dir) -> list[int]:
    state = tf.train.get_checkpoint_state(str(run_dir))
    assert state is not None, f"no checkpoint state in {run_dir}"
    return [int(re.search(r"-(\d+)$", p).group(1)) for p in state.all_model_checkpoint_paths]


def test_saves_at_start_every_n_steps_and_at_end(make_config, run_train):
    save_steps, last_step = 5, 12
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "checkpoint_saver", "save_steps": save_steps, "max_to_keep": 10},
            ]
        )
    )
    # after_create_session saves step 0, after_run every save_steps, end the final step.
    expected = sorted({0, *range(save_steps, last_step + 1, save_steps), last_step})
    assert checkpoint_steps(result.run_dir) == expected
    for step in expected:
        assert (result.run_dir / f"model.ckpt-{step}.index").exists()
    assert result.checkpoint_path.endswith(f"model.ckpt-{last_step}")
    assert (result.run_dir / "graph.pbtxt").exists()


def test_max_to_keep_is_honoured(make_config, run_train):
    save_steps, last_step, keep = 2, 10, 2
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "checkpoint_saver", "save_steps": save_steps, "max_to_keep": keep},
            ]
        )
    )
    saved = sorted({0, *range(save_steps, last_step + 1, save_steps), last_step})
    assert checkpoint_steps(result.run_dir) == saved[-keep:]
    for step in saved[:-keep]:
        assert not (result.run_dir / f"model.ckpt-{step}.index").exists()
    for step in saved[-keep:]:
        assert (result.run_dir / f"model.ckpt-{step}.index").exists()


#: A hook that records, per local step, every Session.run on the real session (its first before_run to its end).
RUN_COUNTER = """
import collections
import sys

import tensorflow as tf
from tensorflow.python.client import pywrap_tf_session

RUNS_PER_STEP = collections.Counter()


class RunCounter(tf.compat.v1.train.SessionRunHook):
    # Counts session calls where they reach TensorFlow's C API: Session.run and make_callable callables
    # call pywrap_tf_session.TF_SessionRun_wrapper; hookrun's engine calls it directly (its own reference).
    def __init__(self):
        self.step = 0
        self._saved = []

    def _counting(self, original):
        def counted(*args, **kwargs):
            if self.step:
                RUNS_PER_STEP[self.step] += 1
            return original(*args, **kwargs)
        return counted

    def after_create_session(self, session, coord):
        engine = sys.modules.get("hookrun.runner.session.engine")
        for owner, name in ((pywrap_tf_session, "TF_SessionRun_wrapper"), (engine, "_session_run")):
            if owner is not None and getattr(owner, name, None) is not None:
                self._saved.append((owner, name, getattr(owner, name)))
                setattr(owner, name, self._counting(getattr(owner, name)))

    def before_run(self, run_context):
        self.step += 1

    def end(self, session):
        self.step = 0
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
"""


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_no_extra_session_run_per_step(make_config, run_train, write_module, engine):
    """One session call per step: TensorFlow's hook alone would re-read ``global_step`` after every step.

    Step 1 reads ``global_step`` once more, by design: the step clock checks its count there. The
    last step is left out: ``stop_at_step`` confirms it there, and the runner reads the final step.
    """
    counter = write_module("run_counter", RUN_COUNTER)
    last_step = 12
    run_train(
        make_config(
            hooks=[
                # First, so its end() stops counting before the saver's final save.
                {"type": "custom", "class": f"{counter}:RunCounter"},
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "checkpoint_saver", "save_steps": 1000},
            ],
            session={"engine": engine},
        )
    )
    runs = user_module(counter).RUNS_PER_STEP
    assert sorted(runs) == list(range(1, last_step + 1))
    assert {step: runs[step] for step in range(2, last_step)} == dict.fromkeys(range(2, last_step), 1)
    assert runs[1] == 2


def test_never_writes_non_finite_weights(make_config, run_train, tmp_path):
    """A run that diverges on purpose, with the worst hook order: no checkpoint holds NaN or inf."""
    import numpy as np
    import pytest
    import tensorflow as tf

    from hookrun.common.errors import TrainingError

    loaded = make_config(
        hooks=[
            {"type": "stop_at_step", "last_step": 200},
            {"type": "checkpoint_saver", "save_steps": 1, "max_to_keep": 1000},
            {"type": "nan_tensor", "fail_on_nan_loss": False},  # only requests a stop: end() would save
        ],
        graph={"optimizer": {"name": "sgd", "learning_rate": 1.0e6}},
        data={"epochs": None, "standardize": False},
    )
    with pytest.raises(TrainingError, match="weights are not finite at step") as info:
        run_train(loaded)
    run_dir = tmp_path / "run"
    paths = tf.train.get_checkpoint_state(str(run_dir)).all_model_checkpoint_paths
    assert paths and str(paths[-1]) in str(info.value)  # names the last good checkpoint
    for path in paths:
        reader = tf.train.load_checkpoint(path)
        for name, dtype in reader.get_variable_to_dtype_map().items():
            if dtype.is_floating:
                assert np.all(np.isfinite(reader.get_tensor(name))), f"{path}: {name} is not finite"
