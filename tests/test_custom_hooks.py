"""Custom hooks run as they would under ``MonitoredTrainingSession`` (issue 11).

Variables a hook creates in ``begin()`` are checkpointed, errors outside the step loop say where they
happened, constructor errors are config errors (exit 2), duck-typed hooks are accepted.
"""

from __future__ import annotations

import pytest

from tests.conftest import user_module

ENGINES = ["hookrun", "tf"]

#: A hook with its own variable, made in begin() (as seq2seq's TokensPerSecondCounter does).
COUNTER = """
import tensorflow as tf

SEEN = []


class TokenCounter(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        with tf.compat.v1.variable_scope("tokens_counter"):
            self.count = tf.compat.v1.get_variable(
                "count", [], tf.int64, initializer=tf.compat.v1.zeros_initializer(), trainable=False
            )
        self.add = self.count.assign_add(8)

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.add)

    def after_run(self, run_context, run_values):
        SEEN.append(int(run_values.results))
"""


def counter_hooks(module: str, last_step: int) -> list[dict]:
    return [
        {"type": "custom", "class": f"{module}:TokenCounter"},
        {"type": "checkpoint_saver", "save_steps": 2},
        {"type": "stop_at_step", "last_step": last_step},
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_variable_made_in_begin_is_checkpointed_and_restored(engine, write_module, make_config, run_train, tmp_path):
    module = write_module("counter", COUNTER)
    first = run_train(make_config(hooks=counter_hooks(module, 3), session={"engine": engine}))
    assert first.final_global_step == 3
    assert user_module(module).SEEN == [8, 16, 24]
    second = run_train(make_config(hooks=counter_hooks(module, 5), session={"engine": engine}))
    assert second.initial_step == 3 and second.final_global_step == 5
    # restored from the step-3 checkpoint: counting goes on from 24
    assert user_module(module).SEEN == [8, 16, 24, 32, 40]
    import tensorflow as tf

    assert int(tf.train.load_variable(str(tmp_path / "run"), "tokens_counter/count")) == 40
