"""A TF 1.x Estimator program's main() under ``hookrun.estimator`` with one import changed (issue 26).

tests/estimator_programs/main_<name>/ holds the port; its original is the program of
tests/estimator_programs/<original>/original/ (SOURCE.md). The diff is checked line by line; main() runs in a
process of its own, and what it prints equals a plain ``tf.compat.v1`` MonitoredSession's evaluation and
prediction on the same data and the same (its final checkpoint's) weights.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

PROGRAMS = REPO / "tests" / "estimator_programs"

#: port folder -> (folder holding the original in its original/, the files ported).
PORTS = {
    "main_iris": ("iris_custom", ["custom_estimator.py", "iris_data.py"]),
    "main_autos": ("main_autos", ["custom_regression.py", "autos.py"]),
    "main_census": ("main_census", ["task.py", "model.py"]),
}

#: The one line a port may add.
ADDED_IMPORT = "from hookrun import estimator as tf_estimator"
#: (port form, original form): a changed line must equal the original once these are undone.
UNDO = [
    (r"^import tensorflow\.compat\.v1 as tf$", "import tensorflow as tf"),  # TensorFlow 2.21's v1 API
    (r"(?<![\w.])tf_estimator\.", "tf.estimator."),  # the tf.estimator namespace, now hookrun's
]


def port_edits(original: str, port: str) -> list[str]:
    """The port's edits that are not allowed, one line each (empty: the port changes only the imports)."""
    before, after = original.splitlines(), port.splitlines()
    problems: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        removed = [line for line in before[i1:i2] if line.strip()]
        added = [line for line in after[j1:j2] if line.strip() and line != ADDED_IMPORT]
        if len(removed) != len(added):
            problems.append(f"original {i1 + 1}-{i2}: lines added or removed: {added or removed}")
            continue
        for old, new in zip(removed, added, strict=True):
            undone = new
            for pattern, replacement in UNDO:
                undone = re.sub(pattern, replacement, undone)
            if undone != old:
                problems.append(f"not an allowed edit: {old.strip()!r} -> {new.strip()!r}")
    return problems


@pytest.mark.parametrize(("port", "file"), [(port, file) for port, (_, files) in PORTS.items() for file in files])
def test_a_main_port_changes_only_the_import(port, file):
    original = (PROGRAMS / PORTS[port][0] / "original" / file).read_text()
    ported = (PROGRAMS / port / file).read_text()
    assert ported != original
    assert port_edits(original, ported) == []


def test_the_diff_check_refuses_any_other_edit():
    original = (PROGRAMS / "iris_custom" / "original" / "custom_estimator.py").read_text()
    port = (PROGRAMS / "main_iris" / "custom_estimator.py").read_text()
    for broken in (
        port.replace('default=1000, type=int', 'default=10, type=int'),
        port.replace("    classifier = tf_estimator.Estimator(", "    classifier = tf_estimator.Estimator(\n"
                     "        model_dir='runs/iris',"),
        port.replace("learning_rate=0.1", "learning_rate=0.2"),
    ):
        assert broken != port and port_edits(original, broken), broken


#: A plain tf.compat.v1 MonitoredSession on the run's final checkpoint: the port's model_fn and input
#: functions, no hookrun.estimator machinery; prints what main() prints.
REFERENCE = r"""
import sys
import tensorflow.compat.v1 as tf
import custom_estimator, iris_data

model_dir, batch_size = sys.argv[1], int(sys.argv[2])
(train_x, train_y), (test_x, test_y) = iris_data.load_data()
columns = [tf.feature_column.numeric_column(key=key) for key in train_x.keys()]
params = {"feature_columns": columns, "hidden_units": [10, 10], "n_classes": 3}
checkpoint = tf.train.latest_checkpoint(model_dir)


def session(hooks=()):
    creator = tf.train.ChiefSessionCreator(checkpoint_filename_with_path=checkpoint)
    return tf.train.MonitoredSession(session_creator=creator, hooks=list(hooks))


with tf.Graph().as_default():
    tf.train.get_or_create_global_step()
    features, labels = iris_data.eval_input_fn(test_x, test_y, batch_size)
    spec = custom_estimator.my_model(features, labels, "eval", params)
    value, update = spec.eval_metric_ops["accuracy"]
    final = tf.train.FinalOpsHook(value)
    with session([final]) as sess:
        while not sess.should_stop():
            sess.run(update)
print("\nTest set accuracy: {:0.3f}\n".format(final.final_ops_values))
predict_x = {"SepalLength": [5.1, 5.9, 6.9], "SepalWidth": [3.3, 3.0, 3.1], "PetalLength": [1.7, 4.2, 5.4],
             "PetalWidth": [0.5, 1.5, 2.1]}
with tf.Graph().as_default():
    tf.train.get_or_create_global_step()
    features = iris_data.eval_input_fn(predict_x, None, batch_size)
    spec = custom_estimator.my_model(features, None, "infer", params)
    with session() as sess:
        values = sess.run(spec.predictions)
for class_ids, probabilities, expected in zip(values["class_ids"], values["probabilities"], iris_data.SPECIES):
    class_id = class_ids[0]
    probability = probabilities[class_id]
    print(f'Prediction is "{iris_data.SPECIES[class_id]}" ({100 * probability:.1f}%), expected "{expected}"')
"""


def test_iris_main_runs_with_one_import_changed_and_prints_what_plain_tensorflow_computes(tmp_path):
    folder = tmp_path / "program"
    shutil.copytree(PROGRAMS / "main_iris", folder, ignore=shutil.ignore_patterns("__pycache__"))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": str(temporary)}
    done = subprocess.run([sys.executable, "custom_estimator.py", "--train_steps", "40", "--batch_size", "20"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [line for line in done.stdout.splitlines() if line.startswith(("Test set accuracy", "Prediction is"))]
    assert len(printed) == 4, done.stdout
    (model_dir,) = [path for path in temporary.iterdir() if (path / "checkpoint").exists()]  # Estimator's temp dir
    # an ordinary hookrun run directory, which says it came from Python objects YAML cannot name
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["final_global_step"] == 40
    assert any("<lambda>" in item for item in summary["python_objects"]["objects"])
    assert (model_dir / "config.yaml").exists() and list((model_dir / "eval").glob("events.out.tfevents.*"))
    reference = subprocess.run([sys.executable, "-c", REFERENCE, str(model_dir), "20"], cwd=folder, env=env,
                               capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = [line for line in reference.stdout.splitlines()
                if line.startswith(("Test set accuracy", "Prediction is"))]
    assert printed == expected


def test_the_migration_guides_change_one_import_example_runs_as_written(tmp_path):
    text = (REPO / "docs" / "migrating-from-estimator.md").read_text(encoding="utf-8")
    section = text.split("### The program, `linear.py`", 1)[1]
    program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "from hookrun import estimator as tf_estimator" in program and "tf.estimator" not in program
    (tmp_path / "linear.py").write_text(program, encoding="utf-8")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    runs = [subprocess.run([sys.executable, "linear.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr[-3000:]
    first, second = ([line for line in done.stdout.splitlines() if line.startswith(("{", "["))] for done in runs)
    assert "'global_step': 200" in first[0] and "'mae'" in first[0] and "'loss'" in first[0]
    assert second == first  # max_steps reached: the second run trains nothing, evaluates the same checkpoint
    assert "Skipping training since max_steps has already saved." in runs[1].stderr
    summary = json.loads((tmp_path / "runs" / "linear" / "summary.json").read_text())
    assert summary["final_global_step"] == 200 and "python_objects" in summary  # main()'s functions: __main__


#: The autos program in a plain tf.compat.v1 MonitoredTrainingSession: hookrun's seeding for tf_random_seed=1
#: (Python, NumPy, graph), Estimator's graph order (global_step, the input_fn's iterator, the model_fn), the
#: port's model_fn and input functions, the same steps; then its evaluation on the test rows. Prints the line
#: main() prints and the trained weights (JSON).
AUTOS_REFERENCE = r"""
import json, os, random, sys
import numpy as np
import tensorflow.compat.v1 as tf
import custom_regression as program

def params():
    return {"feature_columns": program.feature_columns(), "learning_rate": 0.01,
            "optimizer": tf.train.AdamOptimizer, "hidden_units": [20, 20]}

saved = os.path.join(sys.argv[1], "plain", "model.ckpt")
with tf.Graph().as_default():
    random.seed(1); np.random.seed(1); tf.set_random_seed(1)
    tf.train.get_or_create_global_step()
    # an initializable iterator started by the local init op (Estimator's parse_input_fn_result)
    iterator = tf.data.make_initializable_iterator(program.input_train())
    tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, iterator.initializer)
    features, labels = iterator.get_next()
    spec = program.dnn_regression_fn(features, labels, "train", params())
    saver = tf.train.Saver()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=None, save_summaries_steps=None) as session:
        for _ in range(program.STEPS):
            session.run(spec.train_op)
        weights = {v.op.name: session.run(v).tolist() for v in tf.trainable_variables()}
        saver.save(session._tf_sess(), saved)
with tf.Graph().as_default():
    tf.set_random_seed(1)
    tf.train.get_or_create_global_step()
    features, labels = tf.data.make_one_shot_iterator(program.input_test()).get_next()
    spec = program.dnn_regression_fn(features, labels, "eval", params())
    value, update = spec.eval_metric_ops["rmse"]
    final = tf.train.FinalOpsHook(value)
    creator = tf.train.ChiefSessionCreator(checkpoint_filename_with_path=saved)
    with tf.train.MonitoredSession(session_creator=creator, hooks=[final]) as session:
        while not session.should_stop():
            session.run(update)
print("\nRMS error for the test set: ${:.0f}".format(program.PRICE_NORM_FACTOR * final.final_ops_values))
print(json.dumps(weights))
"""


def test_autos_main_trains_as_a_plain_monitored_training_session_and_prints_the_same_rms_error(tmp_path):
    import numpy as np

    folder = tmp_path / "program"
    shutil.copytree(PROGRAMS / "main_autos", folder, ignore=shutil.ignore_patterns("__pycache__", "original"))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": str(temporary)}
    done = subprocess.run([sys.executable, "custom_regression.py"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [line for line in done.stdout.splitlines() if line.startswith("RMS error")]
    (model_dir,) = [path for path in temporary.iterdir() if (path / "checkpoint").exists()]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["final_global_step"] == 200 and summary["status"] == "finished"
    reference = subprocess.run([sys.executable, "-c", AUTOS_REFERENCE, str(tmp_path)], cwd=folder, env=env,
                               capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr[-3000:]
    lines = reference.stdout.strip().splitlines()
    assert printed == [line for line in lines if line.startswith("RMS error")]
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(model_dir))
    for name, value in json.loads(lines[-1]).items():  # the same weights after the same 200 steps
        np.testing.assert_allclose(tf.train.load_variable(latest, name), np.array(value), rtol=1e-5, atol=1e-6)


#: The census run's final checkpoint in plain tf.compat.v1 sessions: the evaluation on the test file and the
#: probabilities of three rows (JSON), for the run's eval events and its served export.
CENSUS_REFERENCE = r"""
import json, sys
import tensorflow.compat.v1 as tf
import model

checkpoint = tf.train.latest_checkpoint(sys.argv[1])
model_fn = model.generate_model_fn(embedding_size=8, hidden_units=[10, 7], learning_rate=0.1)
out = {}
with tf.Graph().as_default():
    tf.train.get_or_create_global_step()
    features, labels = model.input_fn(["adult.test.csv"], batch_size=40, shuffle=False, num_epochs=1)
    spec = model_fn(features, labels, "eval")
    metrics = dict(spec.eval_metric_ops, loss=tf.metrics.mean(spec.loss))
    final = tf.train.FinalOpsHook({key: value for key, (value, _) in metrics.items()})
    creator = tf.train.ChiefSessionCreator(checkpoint_filename_with_path=checkpoint)
    with tf.train.MonitoredSession(session_creator=creator, hooks=[final]) as session:
        while not session.should_stop():
            session.run([update for _, update in metrics.values()])
    out["eval"] = {key: float(value) for key, value in final.final_ops_values.items()}
rows = {"age": [25, 52, 40], "hours_per_week": [20, 55, 40], "workclass": ["Private", "Self-emp", "Local-gov"],
        "education": ["HS-grad", "Doctorate", "Bachelors"]}
with tf.Graph().as_default():
    tf.train.get_or_create_global_step()
    spec = model_fn({key: tf.constant(value) for key, value in rows.items()}, None, "infer")
    creator = tf.train.ChiefSessionCreator(checkpoint_filename_with_path=checkpoint)
    with tf.train.MonitoredSession(session_creator=creator) as session:
        out["probabilities"] = session.run(spec.predictions["probabilities"]).tolist()
out["rows"] = rows
print(json.dumps(out))
"""

#: The final export, served in a process with TensorFlow alone.
CENSUS_SERVE = r"""
import json, sys
import tensorflow as tf

export, rows = sys.argv[1], json.loads(sys.argv[2])
served = tf.saved_model.load(export)
inputs = {key: tf.constant(value, tf.string if isinstance(value[0], str) else tf.int32) for key, value in rows.items()}
result = served.signatures["serving_default"](**inputs)
print(json.dumps({"probabilities": result["probabilities"].numpy().tolist(), "signatures": sorted(served.signatures),
                  "hookrun": sorted(m for m in sys.modules if m.startswith("hookrun"))}))
"""


def test_census_train_and_evaluate_main_evaluates_each_checkpoint_and_its_final_export_serves(tmp_path):
    import numpy as np

    from tests.conftest import event_scalars

    folder = tmp_path / "program"
    shutil.copytree(PROGRAMS / "main_census", folder, ignore=shutil.ignore_patterns("__pycache__", "original"))
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    flags = ["--job-dir", "job", "--num-layers", "2", "--first-layer-size", "10", "--train-steps", "100"]
    done = subprocess.run([sys.executable, "task.py", *flags], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    job = folder / "job"
    events = job / "eval_census-eval"
    # evaluated after each checkpoint but the first (50, 100: save_checkpoints_steps 50, throttle_secs 600 lets
    # the first pass and the last is evaluated at the end)
    assert [step for step, _ in event_scalars(events, "accuracy")] == [50, 100]
    (export,) = (job / "export" / "census").iterdir()  # FinalExporter: once, at max_steps
    reference = subprocess.run([sys.executable, "-c", CENSUS_REFERENCE, str(job)], cwd=folder, env=env,
                               capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = json.loads(reference.stdout.strip().splitlines()[-1])
    for name in ("accuracy", "auc", "loss"):
        assert event_scalars(events, name)[-1] == (100, pytest.approx(expected["eval"][name], rel=1e-6))
    served = subprocess.run([sys.executable, "-c", CENSUS_SERVE, str(export), json.dumps(expected["rows"])],
                            env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert served.returncode == 0, served.stderr[-3000:]
    result = json.loads(served.stdout.strip().splitlines()[-1])
    assert result["hookrun"] == [] and result["signatures"] == ["prediction", "serving_default"]
    np.testing.assert_allclose(result["probabilities"], expected["probabilities"], rtol=1e-5)
