"""``custom`` hooks through the real runner: class form with args, function form, and imports that fail."""

from __future__ import annotations

import math

import pytest

from hookrun.config_schemas.loader import ConfigError
from tests.conftest import user_module

CLASS_HOOK = """
import tensorflow as tf

CALLS = []


class Recorder(tf.compat.v1.train.SessionRunHook):
    def __init__(self, label, scale=1):
        self.label = label
        self.scale = scale

    def begin(self):
        CALLS.append((self.label, self.scale, "begin"))

    def after_run(self, run_context, run_values):
        CALLS.append((self.label, self.scale, "after_run"))

    def end(self, session):
        CALLS.append((self.label, self.scale, "end"))
"""

FUNCTION_HOOK = """
import tensorflow as tf

BEGUN = []
LOSSES = []


def begin():
    BEGUN.append(True)


def before_run(run_context):
    loss = tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0")
    return tf.compat.v1.train.SessionRunArgs(loss)


def after_run(run_context, run_values):
    LOSSES.append(float(run_values.results))
"""


def test_class_form_gets_its_args_and_is_called(make_config, run_train, write_module):
    module = write_module("my_hooks", CLASS_HOOK)
    last_step = 4
    run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "custom", "class": f"{module}:Recorder", "args": {"label": "rec", "scale": 3}},
            ]
        )
    )
    calls = user_module(module).CALLS
    assert calls == [("rec", 3, "begin"), *[("rec", 3, "after_run")] * last_step, ("rec", 3, "end")]


def test_function_form_functions_are_called(make_config, run_train, write_module):
    module = write_module("my_functions", FUNCTION_HOOK)
    last_step = 5
    run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": last_step},
                {
                    "type": "custom",
                    "begin": f"{module}:begin",
                    "before_run": f"{module}:before_run",
                    "after_run": f"{module}:after_run",
                },
            ]
        )
    )
    functions = user_module(module)
    assert functions.BEGUN == [True]
    assert len(functions.LOSSES) == last_step
    assert all(math.isfinite(v) for v in functions.LOSSES)


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ({"class": "no_such_hook_module:Hook"}, "no_such_hook_module"),
        ({"after_run": "no_such_function_module:after"}, "no_such_function_module"),
    ],
)
def test_a_path_that_does_not_import_is_a_located_config_error(make_config, run_train, tmp_path, entry, named):
    with pytest.raises(ConfigError) as info:
        run_train(make_config(hooks=[{"type": "custom", **entry}]))
    assert info.value.exit_code == 2
    assert named in str(info.value)
    (issue,) = info.value.issues
    assert issue.path == f"hooks[0].{next(iter(entry)).rstrip('_')}" and issue.line is not None
    assert not (tmp_path / "run" / "config.yaml").exists()  # nothing written before the hooks are built


def test_a_module_that_raises_on_import_names_the_reason(make_config, run_train, write_module):
    module = write_module("broken_hooks", "raise RuntimeError('boom at import')\n")
    with pytest.raises(ConfigError, match=rf"cannot import module '{module}' \(RuntimeError: boom at import\)"):
        run_train(make_config(hooks=[{"type": "custom", "class": f"{module}:Hook"}]))


def test_class_rejecting_args_is_a_config_error_at_its_args(make_config, run_train, write_module):
    module = write_module("my_hooks", CLASS_HOOK)
    with pytest.raises(ConfigError, match=r"hooks\[0\]\.args"):
        run_train(make_config(hooks=[{"type": "custom", "class": f"{module}:Recorder", "args": {"nope": 1}}]))
