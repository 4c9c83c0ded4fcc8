"""Issue 24: "Every built-in hook, the engine and ``steps_per_run`` work on such a pipeline" (a user's input_fn).

tests/test_input_fn.py runs five of the hooks on an input_fn; here every built-in hook type (but ``custom``,
tested in tests/hooks/test_custom.py) runs together on an input_fn whose features hold a ``SparseTensor`` (so
``steps_per_run: 2`` pulls one batch per step), through both engines, and each leaves what it leaves on one
device with files: the loss logged, summaries and checkpoints written, evaluations, the history.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hookrun.hooks.registry import hook_configs
from hookrun.runner.config import load_config
from tests.conftest import REPO

HOOKS = [
    {"type": "global_step_waiter", "wait_until_step": 0},
    {"type": "stop_at_step", "last_step": 8},
    {"type": "nan_tensor"},
    {"type": "logging_tensor", "tensors": {"loss": "loss"}, "every_n_iter": 2},
    {"type": "step_counter", "every_n_steps": 2},
    {"type": "summary_saver", "save_steps": 2, "tensors": ["loss"]},
    {"type": "progress_bar"},
    {"type": "history_saver", "every_n_step": 2},
    {"type": "evaluation", "every_n_steps": 4},
    {"type": "early_stopping", "monitor": "val_loss", "patience": 5, "keep_best": True},
    {"type": "checkpoint_saver", "save_steps": 4},
]


def test_the_list_is_every_built_in_hook_but_custom():
    assert {hook["type"] for hook in HOOKS} | {"custom"} == set(hook_configs())


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_every_built_in_hook_runs_on_an_input_fn_with_a_sparse_feature(
    engine, tmp_path, write_module, run_train, captured
):
    import tensorflow as tf

    module = write_module("input_fn_program", (REPO / "tests" / "input_fn_program.py").read_text())
    # the evaluation's batches have the sparse tags too (the model_fn's weights depend on them): 5 of the training's
    evaluation = write_module("tagged_eval", f"import {module}\n\n\ndef eval_input_fn(params):\n"
                                             f"    return {module}.tagged_input_fn(params).take(5)\n")
    config = {
        "name": "every-hook",
        "graph": {"builder": f"{module}:tagged_model_fn"},
        "data": {"input_fn": f"{module}:tagged_input_fn", "eval_input_fn": f"{evaluation}:eval_input_fn",
                 "seed": 0},
        "session": {"engine": engine, "steps_per_run": 2},
        "hooks": HOOKS,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    run = tmp_path / "run"
    result = run_train(load_config(path), run_dir=run)

    assert (result.final_global_step, result.end_of_data) == (8, False)
    assert [row["step"] for row in result.history] == [2, 4, 6, 8]
    assert [evaluation["step"] for evaluation in result.evaluations] == [4, 8]  # 5 batches of 8 each
    assert all(evaluation["val_loss"] > 0 for evaluation in result.evaluations)
    assert (run / "best" / "best.json").exists()  # early_stopping's keep_best
    assert tf.train.latest_checkpoint(str(run)).endswith("-8")
    tags: set[str] = set()
    for events in Path(run).glob("**/events.out.tfevents.*"):  # train/ (summary_saver, step_counter), eval/
        for event in tf.compat.v1.train.summary_iterator(str(events)):
            tags |= {value.tag for value in event.summary.value}
    assert {"loss", "global_step/sec"} <= tags, tags  # summary_saver's tensor, step_counter's rate
    assert "loss = " in captured.text  # logging_tensor
