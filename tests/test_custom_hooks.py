"""Custom hooks run as they would under ``MonitoredTrainingSession`` (issue 11).

Variables a hook creates in ``begin()`` are checkpointed, errors outside the step loop say where they
happened, constructor errors are config errors (exit 2), duck-typed hooks are accepted.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.common.errors import TrainingError
from tests.conftest import base_config, user_module

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


#: Constructors that raise, and hooks that are not SessionRunHook subclasses.
ODD_HOOKS = """
import tensorflow as tf

CALLS = []


class Picky(tf.compat.v1.train.SessionRunHook):
    def __init__(self, every_n_steps=1):
        if every_n_steps <= 0:
            raise ValueError("every_n_steps must be positive")


class Ducky:
    # A hook by duck typing: the five methods, no SessionRunHook base.

    def __init__(self, tag="duck"):
        self.tag = tag

    def begin(self):
        self.loss = tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0")
        CALLS.append("begin")

    def after_create_session(self, session, coord):
        CALLS.append("after_create_session")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs({"loss": self.loss, "by_name": "loss:0"})

    def after_run(self, run_context, run_values):
        CALLS.append(("after_run", sorted(run_values.results)))

    def end(self, session):
        CALLS.append("end")


class Lame:
    def begin(self):
        pass

    def before_run(self, run_context):
        return None
"""


def write_config(tmp_path, hooks, name="c.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(base_config(hooks=hooks), sort_keys=False), encoding="utf-8")
    return path


def cli_train(path, run_dir):
    return CliRunner(env={"COLUMNS": "300"}).invoke(app, ["train", str(path), "--run-dir", str(run_dir)])


def test_a_constructor_raising_valueerror_is_exit_2_at_the_configs_args(tmp_path, linear_csv, write_module):
    module = write_module("odd", ODD_HOOKS)
    hooks = [
        {"type": "stop_at_step", "last_step": 2},
        {"type": "custom", "class": f"{module}:Picky", "args": {"every_n_steps": 0}},
    ]
    path = write_config(tmp_path, hooks)
    result = cli_train(path, tmp_path / "r")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    # file:line:column of hooks[1].args (line 16 of the dumped YAML), the class, the exception and its message
    text = path.read_text().splitlines()
    args_line = next(i for i, t in enumerate(text, 1) if t.strip().startswith("args:"))
    assert f"{path.name}:{args_line}:" in line and "hooks[1].args" in line, line
    assert f"{module}:Picky" in line and "ValueError: every_n_steps must be positive" in line, line
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_duck_typed_hook_runs(engine, write_module, make_config, run_train):
    module = write_module("odd", ODD_HOOKS)
    hooks = [{"type": "custom", "class": f"{module}:Ducky"}, {"type": "stop_at_step", "last_step": 2}]
    run_train(make_config(hooks=hooks, session={"engine": engine}))
    assert user_module(module).CALLS == [
        "begin",
        "after_create_session",
        ("after_run", ["by_name", "loss"]),
        ("after_run", ["by_name", "loss"]),
        "end",
    ]


def test_an_object_lacking_methods_is_refused_naming_them(tmp_path, linear_csv, write_module):
    module = write_module("odd", ODD_HOOKS)
    path = write_config(tmp_path, [{"type": "custom", "class": f"{module}:Lame"}])
    result = cli_train(path, tmp_path / "r")
    assert result.exit_code == 2, result.output
    assert "lacks after_create_session, after_run, end" in result.stderr, result.stderr
    assert "hooks[0].class" in result.stderr and f"{path.name}:" in result.stderr


#: Hooks that fail outside the step loop.
FAILING = """
import tensorflow as tf


class FailIn(tf.compat.v1.train.SessionRunHook):
    def __init__(self, method):
        self.method = method

    def begin(self):
        if self.method == "begin":
            raise ValueError("no vocabulary file")
        if self.method == "init_op":  # an init op that fails: session creation fails
            one = tf.compat.v1.placeholder_with_default(1, [])
            check = tf.debugging.assert_equal(one, 2, message="bad init")
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.INIT_OP, check)

    def after_create_session(self, session, coord):
        if self.method == "after_create_session":
            raise RuntimeError("cannot reach the metrics server")
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("method", "where", "message"),
    [
        ("begin", "in hooks[1] (custom {module}:FailIn).begin() before the first step", "ValueError: no vocabulary"),
        (
            "after_create_session",
            "in hooks[1] (custom {module}:FailIn).after_create_session() before the first step",
            "RuntimeError: cannot reach the metrics server",
        ),
        (
            "init_op",
            "while creating the session (before the first step)",
            "InvalidArgumentError: assertion failed: [bad init]",
        ),
    ],
)
def test_a_failure_before_the_first_step_says_where(
    engine, method, where, message, write_module, make_config, run_train
):
    module = write_module("failing", FAILING)
    hooks = [
        {"type": "stop_at_step", "last_step": 2},
        {"type": "custom", "class": f"{module}:FailIn", "args": {"method": method}},
    ]
    with pytest.raises(TrainingError) as info:
        run_train(make_config(hooks=hooks, session={"engine": engine}))
    text = str(info.value)
    assert where.format(module=module) in text, text
    assert message in text and "at step" not in text, text


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_restore_says_so_not_a_step(engine, write_module, make_config, run_train, tmp_path):
    """A hook variable added on resume is not in the checkpoint: restoring fails, before any step."""
    module = write_module("counter", COUNTER)
    plain = [{"type": "checkpoint_saver", "save_steps": 2}, {"type": "stop_at_step", "last_step": 2}]
    run_train(make_config(hooks=plain, session={"engine": engine}))
    with pytest.raises(TrainingError) as info:
        run_train(make_config(hooks=counter_hooks(module, 4), session={"engine": engine}))
    text = str(info.value)
    assert f"while restoring checkpoint {tmp_path / 'run' / 'model.ckpt-2'} (before the first step)" in text, text
    assert "at step" not in text and "NotFoundError" in text, text


#: A custom hook with state (the hook state protocol: state_dict / load_state_dict).
STATEFUL = """
import tensorflow as tf

LOADED = []


class Counting(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.n = 0

    def state_dict(self):
        return {"n": self.n}

    def load_state_dict(self, state):
        LOADED.append(state)
        self.n = state["n"]

    def after_run(self, run_context, run_values):
        self.n += 1
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_hook_state_is_saved_with_each_checkpoint_collected_with_it_and_restored(
    engine, write_module, make_config, run_train, tmp_path
):
    module = write_module("stateful", STATEFUL)

    def hooks(last_step):
        return [
            {"type": "custom", "class": f"{module}:Counting"},
            {"type": "checkpoint_saver", "save_steps": 2, "max_to_keep": 2},
            {"type": "stop_at_step", "last_step": last_step},
        ]

    run_train(make_config(hooks=hooks(5), session={"engine": engine}))
    run = tmp_path / "run"
    # checkpoints at 0, 2, 4 and 5 (end); the Saver keeps 4 and 5, and their states alone remain
    assert sorted(p.name for p in run.glob("hook_state-*.json")) == ["hook_state-4.json", "hook_state-5.json"]
    saved = json.loads((run / "hook_state-5.json").read_text())
    assert saved["step"] == 5 and saved["hooks"]["hooks[0]"] == {"class": "Counting", "state": {"n": 5}}
    assert json.loads((run / "hook_state-4.json").read_text())["hooks"]["hooks[0]"]["state"] == {"n": 4}
    assert user_module(module).LOADED == []
    run_train(make_config(hooks=hooks(8), session={"engine": engine}))
    assert user_module(module).LOADED == [{"n": 5}]
    assert json.loads((run / "hook_state-8.json").read_text())["hooks"]["hooks[0]"]["state"] == {"n": 8}
