"""A model_fn's scaffold, training_chief_hooks, evaluation_hooks and duck-typed hooks, run for real (issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from rich.console import Console

from tests.conftest import BATCH_SIZE, NUM_ROWS, event_scalars, user_module

#: A model_fn setting every spec field this file tests, each switched on by ``params``.
MODEL_FN = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys

EVENTS = []
INIT_CALLS = []


class Recorder(tf.compat.v1.train.SessionRunHook):
    def __init__(self, name, fetch=None):
        self.name = name
        self.fetch = fetch

    def begin(self):
        tf.constant(0, name=self.name + "_begin")  # a hook may build ops here: the graph is not final yet
        EVENTS.append((self.name, "begin", None))

    def after_create_session(self, session, coord):
        EVENTS.append((self.name, "after_create_session", None))

    def before_run(self, run_context):
        EVENTS.append((self.name, "before_run", None))
        if self.fetch is not None:
            return tf.compat.v1.train.SessionRunArgs(self.fetch)
        return None

    def after_run(self, run_context, run_values):
        EVENTS.append((self.name, "after_run", run_values.results))

    def end(self, session):
        EVENTS.append((self.name, "end", None))


class DuckRecorder:
    # all five SessionRunHook methods, no TensorFlow base class

    def __init__(self, name):
        self.name = name

    def begin(self):
        EVENTS.append((self.name, "begin", None))

    def after_create_session(self, session, coord):
        EVENTS.append((self.name, "after_create_session", None))

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        EVENTS.append((self.name, "after_run", None))

    def end(self, session):
        EVENTS.append((self.name, "end", None))


class Failing(Recorder):
    def after_run(self, run_context, run_values):
        raise ValueError("boom in after_run")


class Counting(Recorder):
    # builds a (global) variable in begin() and counts the batches it sees in it

    def begin(self):
        super().begin()
        v1 = tf.compat.v1
        self.count = v1.get_variable("eval_batches_seen", [], tf.int64, v1.zeros_initializer(), trainable=False)
        self.increment = self.count.assign_add(1)

    def before_run(self, run_context):
        super().before_run(run_context)
        return tf.compat.v1.train.SessionRunArgs(self.increment)


class StopAfterFirst(Recorder):
    def after_run(self, run_context, run_values):
        super().after_run(run_context, run_values)
        run_context.request_stop()


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    n = int(features.shape[-1])
    w = v1.get_variable("w", [n, 1], initializer=v1.zeros_initializer())
    # "pre-trained" and frozen: only the scaffold's init_fn gives it values
    pretrained = v1.get_variable("pretrained", [n, 1], initializer=v1.zeros_initializer(), trainable=False)
    out = tf.matmul(features, w + pretrained)
    loss = tf.reduce_mean(tf.square(out - labels))
    spec = {"mode": mode, "loss": loss, "predictions": out}
    if mode == ModeKeys.TRAIN:
        spec["training_hooks"] = [Recorder("train0"), DuckRecorder("duck")]
        spec["training_chief_hooks"] = [Recorder("chief0"), Recorder("chief1")]
        if params.get("init_from"):
            values = np.load(params["init_from"]).astype(np.float32)
            placeholder = v1.placeholder(tf.float32, [n, 1])
            assign = pretrained.assign(placeholder)

            def init_fn(scaffold, session):
                INIT_CALLS.append(type(scaffold).__module__)
                session.run(assign, {placeholder: values})

            spec["scaffold"] = v1.train.Scaffold(init_fn=init_fn)
        if params.get("summary"):
            summary_op = v1.summary.scalar("model_fn_scalar", 2 * loss)
            spec["scaffold"] = v1.train.Scaffold(summary_op=summary_op)
        if params.get("saver_keep"):
            saver = v1.train.Saver(max_to_keep=int(params["saver_keep"]))
            spec["scaffold"] = v1.train.Scaffold(saver=saver)
    if mode == ModeKeys.EVAL:
        hooks = [Recorder("eval0", fetch=loss), Recorder("eval1")]
        if params.get("stop_eval"):
            hooks.append(StopAfterFirst("stopper"))
        if params.get("count_eval"):
            hooks.append(Counting("counting"))
        if params.get("fail_eval"):
            hooks.append(Failing("failing"))
        spec["evaluation_hooks"] = hooks
    return EstimatorSpec(**spec)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""

#: Validation batches with validation_split 0.25: 16 of the 64 rows, batches of 8.
EVAL_BATCHES = NUM_ROWS // 4 // BATCH_SIZE


def events_of(module: str, name: str) -> list[str]:
    return [method for hook, method, _ in user_module(module).EVENTS if hook == name]


def checkpoint_value(run_dir, name):
    return tf.train.load_variable(tf.train.latest_checkpoint(str(run_dir)), name)


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_scaffold_init_fn_runs_on_a_new_run_only_and_its_values_are_in_the_checkpoint(
    make_config, write_module, run_train, tmp_path, engine
):
    pretrained = np.array([[0.5], [-0.25]], dtype=np.float32)
    np.save(tmp_path / "pretrained.npy", pretrained)
    module = write_module("mfn", MODEL_FN)
    hooks = [{"type": "checkpoint_saver", "save_steps": 100}]
    data = {"epochs": 1}

    def config(epochs):
        return make_config(
            graph={"builder": f"{module}:model_fn", "params": {"init_from": str(tmp_path / "pretrained.npy")}},
            data={**data, "epochs": epochs},
            hooks=hooks,
            session={"engine": engine},
        )

    first = run_train(config(1))
    assert user_module(module).INIT_CALLS == ["hookrun.runner.session.scaffold"]  # called with the merged scaffold
    np.testing.assert_array_equal(checkpoint_value(first.run_dir, "pretrained"), pretrained)
    assert np.abs(checkpoint_value(first.run_dir, "w")).sum() > 0  # trained on top of it

    # Resuming restores the checkpoint, so init_fn does not run again (SessionManager's rule, as under Estimator).
    second = run_train(config(2))
    assert second.initial_step == first.final_global_step and second.final_global_step > second.initial_step
    assert len(user_module(module).INIT_CALLS) == 1
    np.testing.assert_array_equal(checkpoint_value(second.run_dir, "pretrained"), pretrained)


def test_without_the_scaffold_the_frozen_variable_stays_zero(make_config, write_module, run_train):
    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(graph={"builder": f"{module}:model_fn"}, data={"epochs": 1},
                    hooks=[{"type": "checkpoint_saver", "save_steps": 100}])
    )
    np.testing.assert_array_equal(checkpoint_value(result.run_dir, "pretrained"), np.zeros((2, 1)))


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_a_scaffold_saver_replaces_hookruns(make_config, write_module, run_train, engine):
    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn", "params": {"saver_keep": 1}},
            data={"epochs": 1},
            hooks=[{"type": "checkpoint_saver", "save_steps": 1, "max_to_keep": 4}],
            session={"engine": engine},
        )
    )
    state = tf.train.get_checkpoint_state(str(result.run_dir))
    # the model_fn's Saver(max_to_keep=1): one checkpoint kept (hookrun's would keep the hook's 4), and its
    # save_relative_paths=False (TensorFlow's default) writes absolute paths into the state file
    assert len(state.all_model_checkpoint_paths) == 1
    assert f'model_checkpoint_path: "{result.run_dir}/model.ckpt-' in (result.run_dir / "checkpoint").read_text()
    assert sorted(p.name for p in result.run_dir.glob("model.ckpt-*.index")) == [
        f"model.ckpt-{result.final_global_step}.index"
    ]


def test_a_run_with_a_scaffold_saver_resumes_after_its_directory_moved(make_config, write_module, run_train, tmp_path):
    module = write_module("mfn", MODEL_FN)

    def config(epochs):
        return make_config(
            graph={"builder": f"{module}:model_fn", "params": {"saver_keep": 2}},
            data={"epochs": epochs},
            hooks=[{"type": "checkpoint_saver", "save_steps": 3}],
        )

    first = run_train(config(1), run_dir=tmp_path / "before")
    (tmp_path / "before").rename(tmp_path / "after")
    assert tf.train.latest_checkpoint(str(tmp_path / "after")) is None  # the saver's absolute paths: stale
    second = run_train(config(2), run_dir=tmp_path / "after")  # hookrun finds the checkpoints by file name
    assert second.initial_step == first.final_global_step > 0
    assert second.final_global_step == 2 * first.final_global_step


def test_hookruns_own_saver_without_a_scaffold(make_config, write_module, run_train):
    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn"},
            data={"epochs": 1},
            hooks=[{"type": "checkpoint_saver", "save_steps": 1, "max_to_keep": 4}],
        )
    )
    state = tf.train.get_checkpoint_state(str(result.run_dir))
    assert len(state.all_model_checkpoint_paths) == 4
    assert 'model_checkpoint_path: "model.ckpt-' in (result.run_dir / "checkpoint").read_text()  # relative


def test_summary_saver_writes_the_scaffolds_summary_op_too(make_config, write_module, run_train):
    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn", "params": {"summary": True}},
            data={"epochs": 1},
            hooks=[{"type": "summary_saver", "save_steps": 3, "tensors": ["loss"]}],
        )
    )
    own = event_scalars(result.run_dir / "train", "loss")  # TRAIN_EVENT_DIR
    given = event_scalars(result.run_dir / "train", "model_fn_scalar")
    assert [step for step, _ in given] == [step for step, _ in own] == [1, 4, 7]
    for (_, loss), (_, doubled) in zip(own, given, strict=True):
        assert doubled == pytest.approx(2 * loss, rel=1e-5)  # the same step's loss, through the model_fn's op


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_chief_hooks_run_after_the_training_hooks_and_duck_typed_hooks_run(
    make_config, write_module, run_train, tmp_path, engine
):
    module = write_module("mfn", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn"},
        data={"epochs": 1},
        hooks=[{"type": "history_saver", "every_n_step": 2}],
        session={"trace": True, "engine": engine},
    )
    result = run_train(loaded)
    steps = result.final_global_step
    assert steps == NUM_ROWS // BATCH_SIZE  # one epoch, no validation split
    events = user_module(module).EVENTS
    begins = [hook for hook, method, _ in events if method == "begin"]
    assert begins == ["train0", "duck", "chief0", "chief1"]
    for name in ("train0", "duck", "chief0", "chief1"):
        assert events_of(module, name).count("after_run") == steps
        assert events_of(module, name)[-1] == "end"
    trace = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    traced = sorted({(t["position"], t["hook"]) for t in trace})
    assert traced == [
        (0, "history_saver"),
        (1, "training_hooks[0] Recorder"),
        (2, "training_hooks[1] DuckRecorder"),
        (3, "training_chief_hooks[0] Recorder"),
        (4, "training_chief_hooks[1] Recorder"),
    ]


def test_chief_hooks_are_left_out_on_a_worker_that_is_not_the_chief(make_config, write_module, tmp_path):
    from hookrun.runner.cluster.plan import resolve_cluster
    from hookrun.runner.roles import ClusterTaskRole
    from hookrun.runner.training.prepare import prepare

    module = write_module("mfn", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn"},
        cluster={"worker": ["127.0.0.1:1", "127.0.0.1:2"], "ps": ["127.0.0.1:3"]},
    )
    prepared = {}
    for task in ("worker:0", "worker:1"):
        role = ClusterTaskRole(resolve_cluster(loaded.config.cluster, task, environ={}))
        prepared[task] = prepare(loaded, tmp_path / "run", Console(quiet=True), role=role)
    chief, other = prepared["worker:0"], prepared["worker:1"]
    assert chief.hooks.spec_names == [
        "training_hooks[0] Recorder",
        "training_hooks[1] DuckRecorder",
        "training_chief_hooks[0] Recorder",
        "training_chief_hooks[1] Recorder",
    ]
    assert [getattr(h, "name", None) for h in chief.hooks.instances] == ["train0", "duck", "chief0", "chief1"]
    assert other.hooks.spec_names == ["training_hooks[0] Recorder", "training_hooks[1] DuckRecorder"]
    assert [getattr(h, "name", None) for h in other.hooks.instances] == ["train0", "duck"]


def expected_pass() -> list[str]:
    """One evaluation pass's calls on an evaluation hook."""
    return ["after_create_session"] + ["before_run", "after_run"] * EVAL_BATCHES + ["end"]


def test_evaluation_hooks_run_around_each_evaluation_of_the_evaluation_hook(make_config, write_module, run_train):
    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn"},
            data={"validation_split": 0.25, "epochs": 1},
            hooks=[{"type": "evaluation", "every_n_steps": 2}],
        )
    )
    evaluations = len(result.evaluations)
    assert [e["step"] for e in result.evaluations] == [2, 4, 6]
    for name in ("eval0", "eval1"):
        assert events_of(module, name) == ["begin"] + expected_pass() * evaluations
    # the hooks run in their order within each call
    calls = [(hook, method) for hook, method, _ in user_module(module).EVENTS if hook.startswith("eval")]
    assert calls[:3] == [("eval0", "begin"), ("eval1", "begin"), ("eval0", "after_create_session")]
    # eval0 fetched the eval-mode loss with each update: the batch losses, 2 per evaluation
    losses = [value for hook, method, value in user_module(module).EVENTS if (hook, method) == ("eval0", "after_run")]
    assert len(losses) == EVAL_BATCHES * evaluations and all(np.isfinite(v) and v > 0 for v in losses)
    # their mean (equal batches) is the evaluation's val_loss: the hook saw the very batches evaluated
    for index, record in enumerate(result.evaluations):
        batch = losses[index * EVAL_BATCHES : (index + 1) * EVAL_BATCHES]
        assert record["val_loss"] == pytest.approx(sum(batch) / EVAL_BATCHES, rel=1e-5)


def test_evaluation_hooks_run_in_hookrun_evaluate_and_do_not_change_the_values(make_config, write_module, run_train):
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn"},
            data={"validation_split": 0.25, "epochs": 1},
            hooks=[{"type": "evaluation", "every_n_steps": 100}, {"type": "checkpoint_saver", "save_steps": 100}],
        )
    )
    user_module(module).EVENTS.clear()
    evaluated = evaluate(result.run_dir)
    assert evaluated.global_step == result.final_global_step == result.evaluations[-1]["step"]
    assert evaluated.metrics["val_loss"] == pytest.approx(result.evaluations[-1]["val_loss"], rel=1e-6)
    for name in ("eval0", "eval1"):
        assert events_of(module, name) == ["begin", *expected_pass()]
    assert not [e for e in user_module(module).EVENTS if not e[0].startswith("eval")]  # no training hook


def test_variables_an_evaluation_hook_builds_in_begin_are_initialized_in_hookrun_evaluate(
    make_config, write_module, run_train
):
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn", "params": {"count_eval": True}},
            data={"validation_split": 0.25, "epochs": 1},
            hooks=[{"type": "evaluation", "every_n_steps": 3}, {"type": "checkpoint_saver", "save_steps": 100}],
        )
    )
    # in training the variable is the evaluation's own (begin() ran in its graph, as Estimator's): initialized
    # with the session, kept across the 2 evaluations, not saved in the training checkpoints
    counts = [v for h, m, v in user_module(module).EVENTS if (h, m) == ("counting", "after_run")]
    assert counts == list(range(1, 2 * EVAL_BATCHES + 1))
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(result.run_dir)))
    assert not any("eval_batches_seen" in name for name in reader.get_variable_to_shape_map())
    user_module(module).EVENTS.clear()
    evaluated = evaluate(result.run_dir)  # its own graph: the hook's variable is not restored but initialized
    counts = [v for h, m, v in user_module(module).EVENTS if (h, m) == ("counting", "after_run")]
    assert counts == list(range(1, EVAL_BATCHES + 1))
    assert evaluated.metrics["val_loss"] == pytest.approx(result.evaluations[-1]["val_loss"], rel=1e-6)


def test_an_evaluation_hook_requesting_a_stop_ends_the_pass_after_that_batch(make_config, write_module, run_train):
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn", "params": {"stop_eval": True}},
            data={"validation_split": 0.25, "epochs": 1},
            hooks=[{"type": "evaluation", "every_n_steps": 100}, {"type": "checkpoint_saver", "save_steps": 100}],
        )
    )
    one_batch = ["after_create_session", "before_run", "after_run", "end"]
    assert events_of(module, "stopper") == ["begin", *one_batch]
    user_module(module).EVENTS.clear()
    evaluated = evaluate(result.run_dir)
    assert events_of(module, "eval0") == ["begin", *one_batch]
    first_batch_loss = [v for h, m, v in user_module(module).EVENTS if (h, m) == ("eval0", "after_run")]
    assert evaluated.metrics["val_loss"] == pytest.approx(first_batch_loss[0], rel=1e-5)  # that batch only


def test_validate_build_lists_every_hook_field(make_config, write_module, tmp_path):
    module = write_module("mfn", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn"},
        data={"validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 2}],
    )
    done = subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "validate", str(loaded.path), "--build"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert (
        "model_fn training_hooks (run after the config's hooks, in this order): "
        "training_hooks[0] Recorder, training_hooks[1] DuckRecorder" in out
    )
    assert (
        "model_fn training_chief_hooks (run after the training_hooks, on the chief only): "
        "training_chief_hooks[0] Recorder, training_chief_hooks[1] Recorder" in out
    )
    assert (
        "model_fn evaluation_hooks (run around each evaluation pass, in this order): "
        "evaluation_hooks[0] Recorder, evaluation_hooks[1] Recorder" in out
    )


def test_an_evaluation_hook_that_raises_in_hookrun_evaluate_exits_1_with_one_line(
    make_config, write_module, run_train, tmp_path
):
    module = write_module("mfn", MODEL_FN)
    result = run_train(
        make_config(graph={"builder": f"{module}:model_fn"}, data={"validation_split": 0.25, "epochs": 1},
                    hooks=[{"type": "checkpoint_saver", "save_steps": 100}])
    )
    saved = result.run_dir / "config.yaml"
    saved.write_text(saved.read_text().replace("params: {}", "params: {fail_eval: true}"))
    assert "fail_eval: true" in saved.read_text()
    done = subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "evaluate", str(result.run_dir)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "evaluation failed in the pass with the model_fn's evaluation_hooks: ValueError: boom in after_run"
        in " ".join(done.stderr.split())
    )
    assert "Traceback" not in done.stderr and not list(result.run_dir.glob("eval-*.json"))
