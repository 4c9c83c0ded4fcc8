"""Issue 25: a model_fn as Estimator ran it: v1 layers out of the box, Keras 3 layers refused, one seed for everything,
the model_fn's own summaries, ``${config_dir}`` in params, builders safe to import."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from hookrun.common.errors import HookrunError
from hookrun.runner.config import load_config
from hookrun.runner.data.input_state import STATE_KEY
from tests.conftest import base_config

#: A model_fn of the TF 1.x Estimator kind: v1 layers named by default, a feature-column input layer and a linear
#: model over named features, a v1 optimizer built under `mode != PREDICT`, no seed of its own.
V1_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys


def model_fn(features, labels, mode, params):
    columns = [tf.compat.v1.feature_column.numeric_column(name) for name in ("a", "b")]
    net = tf.compat.v1.feature_column.input_layer(features, columns)
    net = tf.compat.v1.layers.dense(net, params.get("units", 8), activation=tf.nn.relu)
    net = tf.compat.v1.layers.dropout(net, rate=0.1, training=mode == ModeKeys.TRAIN)
    out = tf.compat.v1.layers.dense(net, 1) + tf.compat.v1.feature_column.linear_model(features, columns)
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions=out)
    loss = tf.compat.v1.losses.mean_squared_error(labels, out)
    train_op = None
    if mode != ModeKeys.PREDICT:
        optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
        if mode == ModeKeys.TRAIN:
            train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=out)


model_fn.hookrun_features = "named"
"""


def _write_config(tmp_path, module: str, **sections) -> object:
    graph = {"builder": f"{module}:model_fn", **sections.pop("graph", {})}
    sections.setdefault("hooks", [{"type": "checkpoint_saver", "save_steps": 1000}])
    config = base_config(graph=graph, **sections)
    config["graph"].pop("optimizer", None)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_v1_layers_feature_columns_and_v1_optimizers_train_with_no_step_of_the_user(tmp_path, linear_csv):
    # A fresh process without TF_USE_LEGACY_KERAS: hookrun itself selects tf-keras before TensorFlow's import.
    (tmp_path / "v1_model.py").write_text(V1_MODEL_FN, encoding="utf-8")
    path = _write_config(tmp_path, "v1_model", data={"epochs": 1})
    env = {key: value for key, value in os.environ.items() if key != "TF_USE_LEGACY_KERAS"}
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(path), "--run-dir", str(run)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    import tensorflow as tf

    names = {name for name, _ in tf.train.list_variables(str(run))}
    assert {"dense/kernel", "dense_1/kernel", "linear_model/a/weights", "dense/kernel/Adam"} <= names


def test_a_keras_3_layer_is_refused_naming_it(tmp_path, linear_csv, run_train):
    (tmp_path / "k3_model.py").write_text(
        V1_MODEL_FN.replace(
            "net = tf.compat.v1.layers.dense(net, params.get(\"units\", 8), activation=tf.nn.relu)",
            "import keras\n    net = keras.layers.Dense(8, name='hidden_k3')(net)",
        ),
        encoding="utf-8",
    )
    sys.modules.pop("k3_model", None)
    with pytest.raises(HookrunError) as info:
        run_train(load_config(_write_config(tmp_path, "k3_model", data={"epochs": 1})))
    message = str(info.value)
    assert "Keras 3 layer 'hidden_k3' (Dense)" in message and "tf.keras.layers" in message
    assert not any((tmp_path / "run").glob("model.ckpt-*")), "nothing trained, nothing saved"


def _final_weights(run) -> dict[str, np.ndarray]:
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(run))
    return {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(str(run)) if "dense" in name}


def test_one_seed_gives_identical_weights_in_two_runs(tmp_path, linear_csv, run_train):
    (tmp_path / "seeded_model.py").write_text(V1_MODEL_FN, encoding="utf-8")
    sys.modules.pop("seeded_model", None)
    path = _write_config(tmp_path, "seeded_model", data={"epochs": 1, "seed": 7})
    runs = [tmp_path / "one", tmp_path / "two"]
    for run in runs:
        run_train(load_config(path), run_dir=run)
    first, second = (_final_weights(run) for run in runs)
    assert first.keys() == second.keys() and "dense/kernel" in first
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    other = tmp_path / "other"
    run_train(load_config(path, ["data.seed=8"]), run_dir=other)
    assert not np.array_equal(_final_weights(other)["dense/kernel"], first["dense/kernel"])


#: A model_fn writing its own summaries, as Estimator programs did (one per mode, so eval's stay out of training).
SUMMARY_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=tf.compat.v1.zeros_initializer())
    out = tf.matmul(features, w)
    loss = tf.reduce_mean(tf.square(out - labels))
    tf.compat.v1.summary.scalar("mean_prediction", tf.reduce_mean(out))
    tf.compat.v1.summary.histogram("weights", w)
    return EstimatorSpec(mode, loss=loss, predictions=out)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize("model_summaries", [True, False])
def test_the_model_fns_own_summaries_are_written_by_summary_saver(tmp_path, linear_csv, run_train, model_summaries):
    from tests.conftest import event_scalars

    module = f"summaries_model_{model_summaries}"
    (tmp_path / f"{module}.py").write_text(SUMMARY_MODEL_FN, encoding="utf-8")
    sys.modules.pop(module, None)
    hooks = [
        {"type": "summary_saver", "save_steps": 4, "model_summaries": model_summaries},
        {"type": "evaluation", "every_n_steps": 4},  # its eval-mode call makes summaries too: not fetched in training
    ]
    path = _write_config(tmp_path, module, data={"epochs": 2, "validation_split": 0.25}, hooks=hooks)
    result = run_train(load_config(path), run_dir=tmp_path / "run")
    written = event_scalars(tmp_path / "run" / "train", "mean_prediction")
    due = list(range(1, result.final_global_step + 1, 4))  # the first step, then every save_steps
    assert len(due) >= 3 and [step for step, _ in event_scalars(tmp_path / "run" / "train", "loss")] == due
    if model_summaries:
        assert [step for step, _ in written] == due
        assert written[0][1] == 0.0 and written[-1][1] != 0.0  # zero weights at step 1, trained later
    else:
        assert written == []
    assert event_scalars(tmp_path / "run" / "train", "evaluation/mean_prediction") == []


PARAMS_BUILDER = """
import tensorflow as tf

SEEN = []


def build(features, labels, params):
    SEEN.append({key: value for key, value in params.items() if key in ("vocab", "out", "literal", "nested")})
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=tf.compat.v1.zeros_initializer())
    return {"loss": tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))}
"""


def test_config_dir_and_run_dir_are_expanded_in_graph_params(tmp_path, linear_csv, run_train, write_module):
    module = write_module("params_builder", PARAMS_BUILDER)
    params = {
        "vocab": "${config_dir}/train.vocab",
        "out": "${run_dir}/tokens.txt",
        "literal": "$${run_dir}",
        "nested": [{"path": "${config_dir}"}],
    }
    path = _write_config(tmp_path, module, graph={"builder": f"{module}:build", "params": params}, data={"epochs": 1})
    run = tmp_path / "run"
    run_train(load_config(path), run_dir=run)
    seen = sys.modules[module].SEEN
    assert seen[0] == {
        "vocab": f"{tmp_path}/train.vocab",
        "out": f"{run}/tokens.txt",
        "literal": "${run_dir}",
        "nested": [{"path": str(tmp_path)}],
    }
    saved = yaml.safe_load((run / "config.yaml").read_text())["graph"]["params"]
    # the saved config (loaded by evaluate, predict, export) names the original config's directory; ${run_dir} stays
    assert saved["vocab"] == f"{tmp_path}/train.vocab" and saved["out"] == "${run_dir}/tokens.txt"
    assert saved["literal"] == "$${run_dir}"


def test_an_unknown_placeholder_in_graph_params_is_a_config_error_before_tensorflow(tmp_path, linear_csv):
    from hookrun.config_schemas.yaml_source import ConfigError

    path = _write_config(tmp_path, "nowhere", graph={"params": {"vocab": "${confg_dir}/train.vocab"}})
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "params.vocab" in str(info.value) and "unknown placeholder `${confg_dir}`" in str(info.value)


#: An Estimator program as published: the model_fn, and `main()` run at module level (a surprise run when imported).
SCRIPT_MODULE = """
import pathlib

import tensorflow as tf


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=tf.compat.v1.zeros_initializer())
    return {"loss": tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))}


def main(argv=None):
    pathlib.Path(__file__).with_name("TRAINED_AT_IMPORT").write_text("the old program ran")


GUARD
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_builder_module_that_trains_at_import_is_refused_not_run(tmp_path, linear_csv, run_train, guarded):
    module = f"estimator_script_{guarded}"
    entry = 'if __name__ == "__main__":\n    tf.compat.v1.app.run(main)' if guarded else "tf.compat.v1.app.run(main)"
    (tmp_path / f"{module}.py").write_text(SCRIPT_MODULE.replace("GUARD", entry), encoding="utf-8")
    sys.modules.pop(module, None)
    path = _write_config(tmp_path, module, data={"epochs": 1})
    if guarded:  # the documented pattern: importing defines the functions only
        assert run_train(load_config(path)).final_global_step > 0
    else:
        with pytest.raises(HookrunError) as info:
            run_train(load_config(path))
        message = str(info.value)
        line = (tmp_path / f"{module}.py").read_text().splitlines().index(entry) + 1
        assert f"{module}.py:{line}: importing module {module!r} would run `tf.compat.v1.app.run(main)`" in message
        assert 'if __name__ == "__main__":' in message
    assert not (tmp_path / "TRAINED_AT_IMPORT").exists()


def test_import_time_calls_finds_entry_points_only_outside_the_main_guard():
    from hookrun.config_schemas.imports import import_time_calls

    source = """
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
FLAGS = tf.compat.v1.flags.FLAGS
try:
    estimator.train(input_fn, max_steps=10)
except ValueError:
    pass
result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
if __name__ == "__main__":
    main()
if "__main__" == __name__:
    absl.app.run(main)
main()
sys.exit(main(sys.argv))
sys.exit(1)
"""
    assert import_time_calls(source) == [
        (7, "estimator.train(input_fn, max_steps=10)"),
        (10, "tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)"),
        (15, "main()"),
        (16, "sys.exit(main(sys.argv))"),
    ]


FLAGS_MODEL_FN = """
import tensorflow as tf
from absl import flags

flags.DEFINE_float("init_value", 0.5, "initial weight")
FLAGS = flags.FLAGS


def model_fn(features, labels, mode, params):
    init = tf.compat.v1.constant_initializer(FLAGS.init_value)
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=init)
    return {"loss": tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))}
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_a_model_fn_reading_unparsed_absl_flags_gets_the_fix(tmp_path, linear_csv, run_train, write_module):
    module = write_module("flags_model", FLAGS_MODEL_FN.replace('"init_value"', f'"init_value_{tmp_path.name}"'))
    source = (tmp_path / f"{module}.py").read_text().replace("FLAGS.init_value", f"FLAGS.init_value_{tmp_path.name}")
    (tmp_path / f"{module}.py").write_text(source)
    with pytest.raises(HookrunError) as info:
        run_train(load_config(_write_config(tmp_path, module, data={"epochs": 1})))
    message = str(info.value)
    assert "UnparsedFlagAccessError" in message
    assert "absl FLAGS are not parsed: give the values in graph.params and read params['name']" in message


CHANGING_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    out = tf.matmul(features, w)
    if params.get("extra"):
        out = out + v1.get_variable("extra_bias", [], initializer=v1.zeros_initializer())
    return {"loss": tf.reduce_mean(tf.square(out - labels))}
"""


def test_a_checkpoint_lacking_a_variable_the_builder_now_makes_names_the_key(
    tmp_path, linear_csv, run_train, write_module
):
    module = write_module("changing_builder", CHANGING_BUILDER)
    hooks = [{"type": "checkpoint_saver", "save_steps": 1000}]
    path = _write_config(tmp_path, module, graph={"builder": f"{module}:build"}, hooks=hooks, data={"epochs": 1})
    run = tmp_path / "run"
    run_train(load_config(path), run)
    source = tmp_path / f"{module}.py"  # the builder's code changed since the checkpoint was written
    source.write_text(source.read_text().replace('params.get("extra")', "True"))
    sys.modules.pop(module, None)
    with pytest.raises(HookrunError) as info:
        run_train(load_config(path, ["data.epochs=2"]), run)
    message = str(info.value)
    assert "Original error:" not in message
    assert f"while restoring checkpoint {run}/model.ckpt-8 (before the first step)" in message  # 64 rows / 8
    assert "NotFoundError: Key extra_bias not found in checkpoint; the graph makes a variable" in message
    assert "graph.warm_start" in message


def test_check_checkpoint_fits_names_the_checkpoint_then_the_variables(tmp_path):
    import tensorflow as tf

    from hookrun.common.errors import SetupError
    from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits

    with tf.Graph().as_default():
        kept = tf.compat.v1.get_variable("kept", [2])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            prefix = tf.compat.v1.train.Saver().save(session, str(tmp_path / "model.ckpt"), global_step=1)
        new = tf.compat.v1.get_variable("new_one", [3])
        with pytest.raises(SetupError) as info:
            check_checkpoint_fits(tf, prefix, [kept, new])
    assert str(info.value).startswith(f"{prefix}: this checkpoint does not fit the run's graph.builder (new_one is ")


def test_a_layer_created_twice_names_the_variable_and_the_fix(tmp_path, linear_csv, run_train, write_module):
    module = write_module("twice_model", V1_MODEL_FN.replace(
        "net = tf.compat.v1.layers.dense(net, params.get(\"units\", 8), activation=tf.nn.relu)",
        "net = tf.compat.v1.layers.dense(net, 8, name='hidden')\n"
        "    net = tf.compat.v1.layers.dense(net, 8, name='hidden')",
    ))
    with pytest.raises(HookrunError) as info:
        run_train(load_config(_write_config(tmp_path, module, data={"epochs": 1})))
    message = str(info.value)
    assert "(train mode) creates the variable hidden/kernel twice in one call" in message
    assert "give each layer its own name" in message and "Originally defined at" not in message


def test_validate_reports_a_builder_that_would_train_at_import_without_running_it(tmp_path, linear_csv):
    # In a fresh process: `hookrun validate` reads the module (ast), imports neither it nor TensorFlow.
    (tmp_path / "script_model.py").write_text(SCRIPT_MODULE.replace("GUARD", "main()"), encoding="utf-8")
    path = _write_config(tmp_path, "script_model")
    code = (
        "import sys; from hookrun.cli.app import main; sys.argv = ['hookrun', 'validate', sys.argv[1]]\n"
        "try:\n    main()\n"
        "finally:\n    print('TF', 'tensorflow' in sys.modules, 'MODULE', 'script_model' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "importing module 'script_model' would run `main()`" in done.stdout + done.stderr
    assert "TF False MODULE False" in done.stdout
    assert not (tmp_path / "TRAINED_AT_IMPORT").exists()


#: The common Estimator pattern: the optimizer under `if mode != PREDICT:`, so it is built in eval mode too.
OPTIMIZER_IN_EVAL = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=tf.compat.v1.zeros_initializer())
    out = tf.matmul(features, w)
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions=out)
    loss = tf.reduce_mean(tf.square(out - labels))
    optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_an_optimizer_built_in_eval_mode_evaluates_unchanged(tmp_path, linear_csv, run_train, write_module):
    # Estimator's pattern (the optimizer under `mode != PREDICT`): the evaluation is built in a graph of its own and
    # only the pass is grafted, so the eval-mode optimizer is built and never run, in training and in evaluate.
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("optimizer_in_eval", OPTIMIZER_IN_EVAL)
    hooks = [{"type": "evaluation", "every_n_steps": 4}, {"type": "checkpoint_saver", "save_steps": 100}]
    path = _write_config(tmp_path, module, data={"epochs": 1, "validation_split": 0.25}, hooks=hooks)
    result = run_train(load_config(path))
    assert [e["step"] for e in result.evaluations] == [4, 6]  # 48 training rows, batches of 8; and at the end
    evaluated = evaluate(result.run_dir)
    assert evaluated.metrics["val_loss"] == pytest.approx(result.evaluations[-1]["val_loss"], rel=1e-6)


#: A model_fn reading Estimator's RunConfig from `config`, as programs did (save steps, seed, chief, model_dir).
RUN_CONFIG_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys

SEEN = []


def model_fn(features, labels, mode, params, config):
    SEEN.append((mode, dict(params), config))
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=tf.compat.v1.zeros_initializer())
    out = tf.matmul(features, w) * config.hookrun.label_scale
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions=out)
    return EstimatorSpec(mode, loss=tf.reduce_mean(tf.square(out - labels)), predictions=out)


model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_every_model_fn_gets_estimators_run_config_and_params_as_written(
    tmp_path, linear_csv, run_train, write_module
):
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("run_config_model", RUN_CONFIG_MODEL_FN)
    hooks = [
        {"type": "checkpoint_saver", "save_steps": 3, "max_to_keep": 2},
        {"type": "summary_saver", "save_steps": 5},
        {"type": "step_counter", "every_n_steps": 7},
        {"type": "evaluation", "every_n_steps": 4},
    ]
    params = {"units": 3, "path": "${config_dir}/vocab.txt"}
    path = _write_config(
        tmp_path, module, graph={"params": params}, hooks=hooks,
        data={"epochs": 1, "seed": 11, "validation_split": 0.25, "label_scale": 2.0},
    )
    run = tmp_path / "run"
    run_train(load_config(path), run_dir=run)
    seen = sys.modules[module].SEEN
    assert [mode for mode, _, _ in seen] == ["train", "eval"]
    for mode, given, config in seen:
        assert given == {"units": 3, "path": f"{tmp_path}/vocab.txt"}  # graph.params as written, expanded
        assert config.model_dir == str(run) and config.tf_random_seed == 11
        assert (config.save_checkpoints_steps, config.save_checkpoints_secs, config.keep_checkpoint_max) == (3, None, 2)
        assert (config.save_summary_steps, config.log_step_count_steps) == (5, 7)
        assert config.is_chief and config.num_worker_replicas == 1 and config.num_ps_replicas == 0
        assert (config.task_type, config.task_id, config.master, config.evaluation_master) == ("worker", 0, "", "")
        assert config.cluster_spec.as_dict() == {} and config.train_distribute is None and config.device_fn is None
        assert config.session_config.inter_op_parallelism_threads >= 0
        assert (config.hookrun.mode, config.hookrun.label_scale, config.hookrun.feature_columns) == (mode, 2.0, None)
    with pytest.raises(AttributeError):
        seen[0][2].model_dir = "elsewhere"  # frozen, as RunConfig's properties
    seen.clear()
    evaluate(run)  # hookrun evaluate: the same config, no session of training
    ((mode, given, config),) = seen
    assert mode == "eval" and given == {"units": 3, "path": f"{tmp_path}/vocab.txt"}  # the config's dir, not the run's
    assert config.model_dir == str(run) and config.save_checkpoints_steps == 3 and config.hookrun.label_scale == 2.0
    seen.clear()
    from hookrun.runner.trained.predict import predict

    predict(run, [str(linear_csv)], tmp_path / "predictions.csv")  # infer mode: the same config
    ((mode, given, config),) = seen
    assert mode == "infer" and given == {"units": 3, "path": f"{tmp_path}/vocab.txt"}
    assert config.model_dir == str(run) and config.tf_random_seed == 11 and config.hookrun.mode == "infer"


#: An evaluation hook that builds its op in begin() from the eval-mode tensors it was given (Estimator's pattern:
#: begin() runs with the evaluation graph as the default graph).
EVAL_HOOK_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys

SEEN = []


class MeanPrediction(tf.compat.v1.train.SessionRunHook):
    def __init__(self, predictions):
        self.predictions = predictions

    def begin(self):
        SEEN.append(("begin", tf.compat.v1.get_default_graph() is self.predictions.graph))
        self.mean = tf.reduce_mean(self.predictions, name="hook_mean_prediction")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.mean)

    def after_run(self, run_context, run_values):
        SEEN.append(("mean", float(run_values.results)))


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1], initializer=tf.compat.v1.ones_initializer())
    out = tf.matmul(features, w)
    hooks = [MeanPrediction(out)] if mode == ModeKeys.EVAL else None
    return EstimatorSpec(mode, loss=tf.reduce_mean(tf.square(out - labels)), predictions=out, evaluation_hooks=hooks)


model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_evaluation_hooks_begin_in_the_evaluation_graph(tmp_path, linear_csv, run_train, write_module):
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("eval_hook_model", EVAL_HOOK_MODEL_FN)
    hooks = [{"type": "evaluation", "every_n_steps": 100}, {"type": "checkpoint_saver", "save_steps": 100}]
    path = _write_config(tmp_path, module, hooks=hooks, data={"epochs": 1, "validation_split": 0.25})
    run = tmp_path / "run"
    run_train(load_config(path), run_dir=run)
    seen = sys.modules[module].SEEN
    assert seen[0] == ("begin", True)
    means = [value for kind, value in seen if kind == "mean"]
    assert len(means) == 2 and all(np.isfinite(means))  # 16 validation rows, batches of 8
    seen.clear()
    evaluate(run)  # the same pass in hookrun evaluate's own graph: the same values
    assert seen[0] == ("begin", True)
    np.testing.assert_allclose([value for kind, value in seen if kind == "mean"], means, rtol=1e-6)


#: An Estimator model_fn naming no layer, with a tf.Variable weight, input_layer over an embedding column, batch
#: normalization under UPDATE_OPS, get_total_loss with a kernel regularizer and its own Adam optimizer (beta1_power
#: is made by tf.Variable under tf.init_scope), fed by its own input_fn.
UNNAMED_MODEL_FN = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys

v1 = tf.compat.v1


def input_fn(params):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    city = np.array(["paris", "rome", "oslo", "lima"])[np.arange(64) % 4]
    y = (x[:, :1] + (city == "rome")[:, None]).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(({"x": x, "city": city}, y)).repeat(2).batch(8, drop_remainder=True)


def model_fn(features, labels, mode, params):
    city = v1.feature_column.categorical_column_with_hash_bucket("city", 8)
    columns = [v1.feature_column.numeric_column("x", shape=[2]), v1.feature_column.embedding_column(city, 3)]
    net = v1.feature_column.input_layer(features, columns)
    net = v1.layers.dense(net, 8, activation=tf.nn.relu, kernel_regularizer=tf.keras.regularizers.l2(0.5))
    net = v1.layers.batch_normalization(net, training=mode == ModeKeys.TRAIN)
    bias = tf.Variable(tf.zeros([1]), name="bias")
    out = v1.layers.dense(net, 1) + bias
    v1.losses.mean_squared_error(labels, out)
    loss = v1.losses.get_total_loss()
    optimizer = v1.train.AdamOptimizer(0.01)
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):  # batch normalization's moving means
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step()) if mode == ModeKeys.TRAIN else None
    return EstimatorSpec(mode, loss=loss, train_op=train_op)
"""


def test_an_unnamed_model_fn_trains_unchanged_under_steps_per_run(tmp_path, run_train, write_module):
    import tensorflow as tf

    module = write_module("unnamed_model", UNNAMED_MODEL_FN)
    weights = {}
    for steps_per_run in (5, 1):
        config = {
            "name": "unnamed",
            "graph": {"builder": f"{module}:model_fn"},
            "data": {"input_fn": f"{module}:input_fn", "seed": 0},
            "session": {"steps_per_run": steps_per_run},
            "hooks": [{"type": "checkpoint_saver", "save_steps": 1000}],
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        run = tmp_path / f"run{steps_per_run}"
        assert run_train(load_config(path), run_dir=run).final_global_step == 16
        reader = tf.train.load_checkpoint(str(run))
        weights[steps_per_run] = {
            name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()
            if "Adam" not in name and name != STATE_KEY  # the input's position (a variant), not a weight
        }
    assert weights[5].keys() == weights[1].keys()
    embedding = "input_layer/city_embedding/embedding_weights"
    assert {"dense/kernel", "dense_1/kernel", "bias", embedding, "batch_normalization/moving_mean"} <= weights[5].keys()
    for name, value in weights[1].items():  # five fused steps compute what five separate steps compute
        np.testing.assert_array_equal(weights[5][name], value, err_msg=name)


def test_run_config_on_a_cluster_names_this_task_as_run_config_did(tmp_path, linear_csv):
    import tensorflow as tf

    from hookrun.runner.cluster.plan import ClusterPlan, Task
    from hookrun.runner.graph.run_config import make_run_info

    config = load_config(_write_config(tmp_path, "anything")).config
    jobs = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}
    info = make_run_info(config, tmp_path / "run", cluster=ClusterPlan(jobs=jobs, task=Task("worker", 1)), tf=tf)
    assert (info.is_chief, info.num_worker_replicas, info.num_ps_replicas) == (False, 3, 1)
    assert (info.task_type, info.task_id, info.master) == ("worker", 1, "grpc://h:3")
    assert info.cluster_spec.as_dict() == jobs and info.model_dir == str(tmp_path / "run")
    chief = make_run_info(config, None, cluster=ClusterPlan(jobs=jobs, task=Task("chief", 0)))
    assert chief.is_chief and chief.task_type == "chief" and dict(chief.cluster_spec) == jobs  # no TF: a dict
    assert chief.save_checkpoints_steps == 1000 and chief.save_summary_steps is None  # _write_config's hooks
