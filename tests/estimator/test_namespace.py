"""``hookrun.estimator``'s namespace without TensorFlow: the names, their sources, RunConfig and TF_CONFIG, the specs'
checks, and the message for a name hookrun lacks (issue 26)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hookrun import estimator as tf_estimator

#: Each public name and the TF 1.15 symbol its docstring must name.
MIRRORS = {
    "Estimator": "tf.estimator.Estimator",
    "RunConfig": "tf.estimator.RunConfig",
    "TrainSpec": "tf.estimator.TrainSpec",
    "EvalSpec": "tf.estimator.EvalSpec",
    "train_and_evaluate": "tf.estimator.train_and_evaluate",
    "FinalExporter": "tf.estimator.FinalExporter",
    "LatestExporter": "tf.estimator.LatestExporter",
    "BestExporter": "tf.estimator.BestExporter",
    "Exporter": "tf.estimator.Exporter",
    "WarmStartSettings": "tf.estimator.WarmStartSettings",
    "EstimatorSpec": "tf.estimator.EstimatorSpec",
    "ModeKeys": "tf.estimator.ModeKeys",
}
METHODS = ("train", "evaluate", "predict", "export_saved_model", "export_savedmodel", "latest_checkpoint",
           "get_variable_names", "get_variable_value", "eval_dir")


def test_importing_the_namespace_and_making_its_objects_imports_no_tensorflow() -> None:
    code = (
        "import sys\n"
        "from hookrun import estimator as tf_estimator\n"
        "est = tf_estimator.Estimator(lambda features, labels, mode: None, model_dir='unused',\n"
        "                             config=tf_estimator.RunConfig(save_checkpoints_steps=5))\n"
        "tf_estimator.TrainSpec(lambda: None, max_steps=3); tf_estimator.EvalSpec(lambda: None)\n"
        "tf_estimator.inputs.numpy_input_fn({'x': [1.0, 2.0]}, shuffle=False)\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", sorted(MIRRORS))
def test_each_name_documents_the_tf_symbol_it_mirrors(name: str) -> None:
    obj = getattr(tf_estimator, name)
    assert MIRRORS[name].rpartition(".")[2] in (obj.__doc__ or "")
    if name not in ("EstimatorSpec", "ModeKeys"):  # hookrun.runner's, re-exported
        assert MIRRORS[name] in obj.__doc__


def test_estimator_has_the_tf_1_15_methods_each_naming_its_source() -> None:
    for method in METHODS:
        doc = getattr(tf_estimator.Estimator, method).__doc__
        assert doc and "mirrors" in doc.lower() or "old name" in doc, method
    assert tf_estimator.EstimatorSpec is __import__("hookrun.runner", fromlist=["x"]).EstimatorSpec
    assert (tf_estimator.ModeKeys.TRAIN, tf_estimator.ModeKeys.EVAL, tf_estimator.ModeKeys.PREDICT) == (
        "train", "eval", "infer")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("BaselineClassifier", ["tf.estimator.BaselineClassifier", "DNNClassifier"]),
        ("BoostedTreesClassifier", ["tf.estimator.BoostedTreesClassifier", "model_fn"]),
        ("VocabInfo", ["tf.estimator.VocabInfo", "docs/estimator-api.md"]),
    ],
)
def test_a_name_hookrun_lacks_raises_a_message_naming_it_and_the_nearest_way(name: str, words: list[str]) -> None:
    with pytest.raises(tf_estimator.NotInHookrunError) as raised:
        getattr(tf_estimator, name)
    assert isinstance(raised.value, AttributeError)  # hasattr() still answers False
    for word in words:
        assert word in str(raised.value)
    with pytest.raises(tf_estimator.NotInHookrunError, match="tf.estimator.export.Nope"):
        tf_estimator.export.Nope  # noqa: B018


def test_run_config_defaults_and_checks_are_tf_1_15s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    config = tf_estimator.RunConfig()
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps, config.save_summary_steps,
            config.keep_checkpoint_max, config.log_step_count_steps) == (600, None, 100, 5, 100)
    assert (config.task_type, config.task_id, config.is_chief, config.num_worker_replicas) == ("worker", 0, True, 1)
    steps = tf_estimator.RunConfig(save_checkpoints_steps=10)
    assert (steps.save_checkpoints_steps, steps.save_checkpoints_secs) == (10, None)
    assert steps.replace(save_checkpoints_secs=5).save_checkpoints_steps is None
    with pytest.raises(ValueError, match="both save_checkpoints_steps and save_checkpoints_secs"):
        tf_estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ValueError, match="train_distribute"):
        tf_estimator.RunConfig(train_distribute=object())
    with pytest.raises(ValueError, match="not supported"):
        config.replace(nope=1)


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ({"type": "chief", "index": 0}, ("chief", 0, True, 3, 1, 0)),
        ({"type": "worker", "index": 1}, ("worker", 1, False, 3, 1, 2)),
        ({"type": "ps", "index": 0}, ("ps", 0, False, 3, 1, None)),
        ({"type": "evaluator", "index": 0}, ("evaluator", 0, False, 0, 0, None)),
    ],
)
def test_run_config_reads_tf_config_roles_as_estimator_did(monkeypatch, task, expected) -> None:
    cluster = {"chief": ["c:1"], "worker": ["w:1", "w:2"], "ps": ["p:1"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
    config = tf_estimator.RunConfig()
    got = (config.task_type, config.task_id, config.is_chief, config.num_worker_replicas, config.num_ps_replicas,
           config.global_id_in_cluster)
    assert got == expected
    assert config.cluster_spec == cluster


def test_without_a_chief_worker_0_is_the_chief(monkeypatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker"}}))
    assert tf_estimator.RunConfig().is_chief
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not JSON"):
        tf_estimator.RunConfig()


def test_specs_check_their_arguments_as_tensorflow_did() -> None:
    with pytest.raises(TypeError, match="input_fn"):
        tf_estimator.TrainSpec(input_fn=3)
    with pytest.raises(ValueError, match="max_steps > 0"):
        tf_estimator.TrainSpec(lambda: None, max_steps=0)
    spec = tf_estimator.EvalSpec(lambda: None)
    assert (spec.steps, spec.start_delay_secs, spec.throttle_secs, spec.exporters) == (100, 120, 600, ())
    exporter = tf_estimator.LatestExporter("latest", lambda: None)
    assert tf_estimator.EvalSpec(lambda: None, exporters=exporter).exporters == (exporter,)
    with pytest.raises(ValueError, match="unique names"):
        tf_estimator.EvalSpec(lambda: None, exporters=[exporter, tf_estimator.FinalExporter("latest", lambda: None)])
    with pytest.raises(TypeError, match="Exporter"):
        tf_estimator.EvalSpec(lambda: None, exporters=[object()])


def test_estimator_arguments_are_checked_as_tensorflow_did(tmp_path) -> None:
    with pytest.raises(ValueError, match="model_fn must be callable"):
        tf_estimator.Estimator(model_fn=None)
    with pytest.raises(ValueError, match="different values"):
        tf_estimator.Estimator(lambda features: None, model_dir=str(tmp_path / "a"),
                               config=tf_estimator.RunConfig(model_dir=str(tmp_path / "b")))
    est = tf_estimator.Estimator(lambda features: None, model_dir=tmp_path / "m", params={"a": [1]})
    assert est.model_dir == str(tmp_path / "m") and est.config.model_dir == est.model_dir
    est.params["a"].append(2)  # a copy, as TensorFlow's
    assert est.params == {"a": [1]}
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(lambda: None, steps=1, max_steps=1)
    with pytest.raises(ValueError, match="steps > 0"):
        est.train(lambda: None, steps=0)


def test_warm_start_settings_become_graph_warm_start() -> None:
    settings = tf_estimator.WarmStartSettings("runs/old", vars_to_warm_start=["dense/kernel", "dense/bias"],
                                              var_name_to_prev_var_name={"dense/kernel": "old/kernel"})
    assert settings.to_config() == {"from": "runs/old", "vars": "dense/kernel$|dense/bias$",
                                    "rename": {"dense/kernel": "old/kernel"}}
    with pytest.raises(ValueError, match="vocab"):
        tf_estimator.WarmStartSettings("x", var_name_to_vocab_info={"a": 1}).to_config()


def test_numpy_input_fn_requires_shuffle_and_equal_lengths() -> None:
    with pytest.raises(ValueError, match="shuffle must be provided"):
        tf_estimator.inputs.numpy_input_fn({"x": [1.0]})
    with pytest.raises(ValueError, match="mismatched"):
        tf_estimator.inputs.numpy_input_fn({"x": [1.0, 2.0]}, [1.0], shuffle=False)


def _imports(path) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_estimator_depends_on_the_runner_and_nothing_depends_on_it() -> None:
    """estimator -> runner -> hooks -> config_schemas; cli and estimator are two faces that never import each other."""
    from tests.conftest import REPO

    offenders = [f"estimator/{path.name}: {name}" for path in (REPO / "estimator").rglob("*.py")
                 for name in _imports(path) if name.startswith("hookrun.cli")]
    offenders += [f"{path.relative_to(REPO)}: {name}"
                  for package in ("cli", "runner", "hooks", "config_schemas", "common")
                  for path in (REPO / package).rglob("*.py") for name in _imports(path)
                  if name.startswith("hookrun.estimator")]
    assert offenders == []


def test_export_names_are_the_runners_serving_classes_not_copies() -> None:
    from hookrun.runner.trained import serving

    for name in ("ServingInputReceiver", "TensorServingInputReceiver", "build_parsing_serving_input_receiver_fn",
                 "build_raw_serving_input_receiver_fn", "ExportOutput", "PredictOutput", "ClassificationOutput",
                 "RegressionOutput"):
        assert getattr(tf_estimator.export, name) is getattr(serving, name), name
