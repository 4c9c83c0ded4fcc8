"""``Estimator.export_saved_model`` and ``train_and_evaluate``: the export serves through ``tf.saved_model.load`` in
a process with only TensorFlow (and TF Serving's method names); evaluation after checkpoints, throttled; the
exporters (issue 26)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hookrun import estimator as tf_estimator
from tests.estimator import tiny_model

#: Run in a fresh process that imports TensorFlow only: load each export, call its signatures, print JSON.
SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

raw, parsing = sys.argv[1], sys.argv[2]
x = np.array(json.loads(sys.argv[3]), np.float32)
out = {"modules": sorted(m.split(".")[0] for m in sys.modules if m.startswith("hookrun"))}
served = tf.saved_model.load(raw).signatures["serving_default"]
out["raw"] = {key: value.numpy().tolist() for key, value in served(x=tf.constant(x)).items()}
examples = [tf.train.Example(features=tf.train.Features(feature={"x": tf.train.Feature(
    float_list=tf.train.FloatList(value=row))})).SerializeToString() for row in x.tolist()]
served = tf.saved_model.load(parsing).signatures["serving_default"]
out["regress"] = {key: value.numpy().tolist() for key, value in served(inputs=tf.constant(examples)).items()}
proto = saved_model_pb2.SavedModel()
proto.ParseFromString(open(parsing + "/saved_model.pb", "rb").read())
out["methods"] = {k: v.method_name for k, v in proto.meta_graphs[0].signature_def.items()}
print(json.dumps(out))
"""


def raw_receiver_fn():
    import tensorflow as tf

    placeholder = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    return tf_estimator.export.build_raw_serving_input_receiver_fn({"x": placeholder})()


def parsing_receiver_fn():
    import tensorflow as tf

    spec = {"x": tf.io.FixedLenFeature([2], tf.float32)}
    return tf_estimator.export.build_parsing_serving_input_receiver_fn(spec)()


def test_the_export_serves_in_a_process_with_only_tensorflow(estimator, tmp_path):
    with pytest.raises(ValueError, match="Couldn't find trained model"):
        estimator.export_saved_model(str(tmp_path / "none"), raw_receiver_fn)
    estimator.train(tiny_model.train_input_fn, steps=5)
    raw = estimator.export_saved_model(str(tmp_path / "raw"), raw_receiver_fn)
    assert isinstance(raw, bytes) and Path(raw.decode()).parent == tmp_path / "raw"
    assert Path(raw.decode()).name.isdigit()  # timestamped, as Estimator
    regressing = tf_estimator.Estimator(tiny_model.model_fn, model_dir=estimator.model_dir,
                                        params={"regression_output": True})
    source = tmp_path / "vocab.txt"
    source.write_text("a\n")
    parsing = regressing.export_savedmodel(str(tmp_path / "parsing"), parsing_receiver_fn,
                                           assets_extra={"notes/vocab.txt": str(source)})
    assert (Path(parsing.decode()) / "assets.extra" / "notes" / "vocab.txt").read_text() == "a\n"
    x, _ = tiny_model.data(rows=3, seed=4)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", SERVE, raw.decode(), parsing.decode(), json.dumps(x.tolist())],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    served = json.loads(done.stdout.strip().splitlines()[-1])
    assert served["modules"] == []  # TensorFlow alone served it
    w, b = estimator.get_variable_value("w"), estimator.get_variable_value("b")
    np.testing.assert_allclose(np.array(served["raw"]["y"]), x @ w + b, rtol=1e-5)
    np.testing.assert_allclose(np.array(served["raw"]["twice"]), 2 * (x @ w + b), rtol=1e-5)
    np.testing.assert_allclose(np.array(served["regress"]["outputs"]), x @ w + b, rtol=1e-5)
    assert served["methods"] == {"serving_default": "tensorflow/serving/regress"}  # TF Serving's Regress API


class SaveSteps:
    """A saving listener recording after_save's steps (the evaluation's listener comes after it)."""

    def __init__(self):
        self.steps = []

    def after_save(self, session, global_step_value):
        self.steps.append(global_step_value)

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


def eval_steps(model_dir: str) -> list[int]:
    from tests.conftest import event_scalars

    return [step for step, _ in event_scalars(Path(model_dir) / "eval", "loss")]


@pytest.mark.parametrize(("throttle_secs", "evaluated"), [(1e-6, [3, 6, 9]), (3600, [3, 9])])
def test_train_and_evaluate_evaluates_after_checkpoints_subject_to_throttle_secs(estimator, throttle_secs, evaluated):
    listener = SaveSteps()
    train_spec = tf_estimator.TrainSpec(tiny_model.train_input_fn, max_steps=9, saving_listeners=[listener])
    latest = tf_estimator.LatestExporter("latest", raw_receiver_fn, exports_to_keep=2)
    final = tf_estimator.FinalExporter("final", raw_receiver_fn)
    eval_spec = tf_estimator.EvalSpec(tiny_model.eval_input_fn, steps=None, exporters=[latest, final],
                                      throttle_secs=throttle_secs)
    metrics, exports = tf_estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    assert listener.steps == [0, 3, 6, 9]
    # not the checkpoint of step 0 (nothing trained yet); then each checkpoint, throttled; the last step at the end
    assert eval_steps(estimator.model_dir) == evaluated
    assert metrics["global_step"] == 9 and metrics == estimator.evaluate(tiny_model.eval_input_fn)
    export = Path(estimator.model_dir) / "export"
    assert len(list((export / "latest").iterdir())) == min(len(evaluated), 2)  # exports_to_keep
    assert len(list((export / "final").iterdir())) == 1  # at max_steps only
    assert exports[1] is not None and Path(exports[1].decode()).parent == export / "final"


def test_best_exporter_exports_only_a_better_loss_and_starts_from_the_eval_events(estimator):
    estimator.train(tiny_model.train_input_fn, steps=6)
    checkpoint = estimator.latest_checkpoint()
    good = estimator.evaluate(tiny_model.eval_input_fn)  # writes eval/ events
    path = str(Path(estimator.model_dir) / "export" / "best")
    # without event files to start from, the first result is the best
    fresh = tf_estimator.BestExporter(serving_input_receiver_fn=raw_receiver_fn, event_file_pattern=None)
    assert fresh.export(estimator, path, checkpoint, good, False) is not None
    assert fresh.export(estimator, path, checkpoint, {**good, "loss": good["loss"] + 1}, False) is None
    # the default reads the best so far from eval/'s events (which hold `good` already), as TensorFlow's
    best = tf_estimator.BestExporter(serving_input_receiver_fn=raw_receiver_fn)
    assert best.export(estimator, path, checkpoint, good, False) is None
    assert best.export(estimator, path, checkpoint, {**good, "loss": good["loss"] / 2}, False) is not None
    assert len(list(Path(path).iterdir())) == 2


def test_train_and_evaluate_on_an_evaluator_task_evaluates_each_new_checkpoint(estimator, monkeypatch):
    estimator.train(tiny_model.train_input_fn, max_steps=9)
    cluster = {"chief": ["localhost:1"], "evaluator": ["localhost:2"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}}))
    evaluator = tf_estimator.Estimator(tiny_model.model_fn, model_dir=estimator.model_dir)
    assert evaluator.config.task_type == "evaluator"
    spec = tf_estimator.EvalSpec(tiny_model.eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0)
    metrics, _ = tf_estimator.train_and_evaluate(evaluator, tf_estimator.TrainSpec(tiny_model.train_input_fn, 9),
                                                 spec)
    assert metrics["global_step"] == 9  # the checkpoint at max_steps ends the evaluator's loop
