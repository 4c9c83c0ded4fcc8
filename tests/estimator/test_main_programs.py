"""A TF 1.x Estimator program's main() under ``hookrun.estimator`` with one import changed (issue 26).

tests/estimator_programs/main_<name>/ holds the port; its original is the program of
tests/estimator_programs/<original>/original/ (SOURCE.md). The diff is checked line by line; main() runs in a
process of its own, and what it prints (census: its evaluations, in eval events) and its final weights equal a
plain ``tf.compat.v1`` MonitoredTrainingSession reference on the same data from the same initial weights, then
that reference's own MonitoredSession evaluation and prediction:

- autos: its RunConfig seeds the run (tf_random_seed=1), so the reference seeds as hookrun does and trains on
  the input_fn itself;
- iris, census: no seed, and their input_fns shuffle without one, so main() runs with a hook recording the
  batches its training read (RECORD_MAIN, through ``Estimator.train``'s ``hooks``); the reference restores
  hookrun's ``model.ckpt-0`` (the checkpoint saver's save at step 0) and is fed those batches in order
  (TRAIN_ON_RECORD). The batches are checked to be the input_fn's own: each epoch's batches hold every row once.
"""

from __future__ import annotations

import difflib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
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


#: Runs a port's main() as ``python <program> <args>`` would (runpy, ``__main__``), with one addition: every
#: ``Estimator.train`` call (``train_and_evaluate``'s too) gets a hook, through its public ``hooks`` argument, that
#: records what the input_fn's iterator gave at each step (``IteratorGetNext``'s outputs), pickled to argv[1] at
#: exit. The ports' input_fns shuffle without a seed, so a reference can only train on the same batches if fed them.
RECORD_MAIN = r"""
import os, pickle, runpy, sys
sys.path.insert(0, os.getcwd())
import tensorflow.compat.v1 as tf
from hookrun import estimator

BATCHES = []


class RecordBatches(tf.train.SessionRunHook):
    def begin(self):
        (get_next,) = [op for op in tf.get_default_graph().get_operations() if op.type == "IteratorGetNext"]
        self._outputs = list(get_next.outputs)

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._outputs)

    def after_run(self, run_context, run_values):
        BATCHES.append(run_values.results)


train = estimator.Estimator.train


def recorded(self, input_fn, hooks=None, **kwargs):
    return train(self, input_fn, hooks=[*(hooks or []), RecordBatches()], **kwargs)


estimator.Estimator.train = recorded
record, sys.argv = sys.argv[1], sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:  # also after tf.app.run's sys.exit
    with open(record, "wb") as handle:
        pickle.dump(BATCHES, handle)
"""

#: A plain tf.compat.v1 MonitoredTrainingSession trained on recorded batches: ``build()`` makes the program's
#: train graph (its input_fn, its model_fn) in a fresh graph; every variable starts from ``initial`` (hookrun's
#: model.ckpt-0, restored by the scaffold's init_fn); each step feeds one recorded batch to the input_fn's
#: ``IteratorGetNext`` outputs and runs the train_op; the weights are saved to ``directory`` after the steps
#: in ``saves``. Returns ``({step: checkpoint}, the trainable variables at the end)``.
TRAIN_ON_RECORD = r"""
import json, pickle, sys
import tensorflow.compat.v1 as tf


def train_on_record(build, initial, record, saves, directory):
    with open(record, "rb") as handle:
        batches = pickle.load(handle)
    with tf.Graph().as_default() as graph:
        tf.train.get_or_create_global_step()
        train_op = build()
        (get_next,) = [op for op in graph.get_operations() if op.type == "IteratorGetNext"]
        saver = tf.train.Saver(max_to_keep=None)
        scaffold = tf.train.Scaffold(saver=saver, init_fn=lambda _, session: saver.restore(session, initial))
        saved = {}
        with tf.train.MonitoredTrainingSession(scaffold=scaffold, checkpoint_dir=None, save_summaries_steps=None,
                                               log_step_count_steps=None) as session:
            for step, batch in enumerate(batches, 1):
                session.run(train_op, feed_dict=dict(zip(get_next.outputs, batch, strict=True)))
                if step in saves:
                    saved[step] = saver.save(session._tf_sess(), directory + "/model.ckpt", global_step=step)
            weights = {v.op.name: session.run(v).tolist() for v in tf.trainable_variables()}
    return saved, weights
"""

#: The iris program in plain tf.compat.v1: trained from hookrun's initial checkpoint on the batches hookrun's
#: run read (TRAIN_ON_RECORD), then main()'s evaluation and predictions of that checkpoint in MonitoredSessions,
#: the port's model_fn and input functions only; prints what main() prints, then the trained weights (JSON).
IRIS_REFERENCE = TRAIN_ON_RECORD + r"""
import custom_estimator, iris_data

model_dir, batch_size, steps, record, directory = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:6]
(train_x, train_y), (test_x, test_y) = iris_data.load_data()
columns = [tf.feature_column.numeric_column(key=key) for key in train_x.keys()]
params = {"feature_columns": columns, "hidden_units": [10, 10], "n_classes": 3}


def build():
    features, labels = iris_data.train_input_fn(train_x, train_y, batch_size)
    return custom_estimator.my_model(features, labels, "train", params).train_op


saved, weights = train_on_record(build, model_dir + "/model.ckpt-0", record, (steps,), directory)
checkpoint = saved[steps]


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
print(json.dumps(weights))
"""


def run_recorded(folder: Path, env: dict[str, str], program: str, *args: str) -> tuple[Any, list[Any]]:
    """``python <program> <args>`` in ``folder`` through :data:`RECORD_MAIN`: the finished process and the batches
    (one list of arrays per training step, ``IteratorGetNext``'s outputs in order) its training read."""
    (folder / "record_main.py").write_text(RECORD_MAIN)
    record = folder / "batches.pickle"
    done = subprocess.run([sys.executable, "record_main.py", str(record), program, *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with record.open("rb") as handle:
        return done, pickle.load(handle)


def run_reference(code: str, folder: Path, *args: str) -> str:
    """``python -c CODE ARGS`` in ``folder`` as a plain-TensorFlow reference, but in this process: what it prints.

    A reference builds its graphs in ``tf.Graph()`` contexts of its own and imports the port's modules from
    ``folder``; those modules leave ``sys.modules`` afterwards, and Python's and NumPy's random states (which a
    reference may seed) are put back. Only the program under test (main()) needs a process of its own: a fresh
    one per reference would import TensorFlow again for nothing it checks.
    """
    import contextlib
    import io
    import random

    before = set(sys.modules)
    states = random.getstate(), np.random.get_state()
    argv, path, cwd = sys.argv, list(sys.path), os.getcwd()
    out = io.StringIO()
    try:
        sys.argv, sys.path[:0] = ["-c", *args], [str(folder)]
        os.chdir(folder)
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<reference>", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv, sys.path[:] = argv, path
        os.chdir(cwd)
        random.setstate(states[0])
        np.random.set_state(states[1])
        for name in set(sys.modules) - before:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]
    return out.getvalue()


def assert_printed_equal(printed: list[str], expected: list[str]) -> None:
    """The same lines, but each number may differ by one in its last printed digit (float round-off)."""
    number = r"\d+\.\d+"
    assert [re.sub(number, "#", line) for line in printed] == [re.sub(number, "#", line) for line in expected]
    for line, other in zip(printed, expected, strict=True):
        for got, want in zip(re.findall(number, line), re.findall(number, other), strict=True):
            assert float(got) == pytest.approx(float(want), abs=1.01 * 10 ** -len(want.split(".")[1])), (line, other)


def assert_epochs_of(batches: list[Any], rows: list[tuple[Any, ...]], per_epoch: int) -> None:
    """Every ``per_epoch`` consecutive batches hold each of ``rows`` once: the input_fn's own shuffled epochs.

    A batch is a list of column arrays (``IteratorGetNext``'s outputs); a row is the tuple of its columns' values.
    """
    for start in range(0, len(batches) - per_epoch + 1, per_epoch):
        read = [row for batch in batches[start:start + per_epoch]
                for row in zip(*(np.ravel(column).tolist() for column in batch), strict=True)]
        assert sorted(read) == sorted(rows), f"batches {start}-{start + per_epoch - 1} are not one epoch of the data"


def test_iris_main_trains_as_a_plain_monitored_training_session_and_prints_the_same(tmp_path):
    import tensorflow as tf

    folder = tmp_path / "program"
    shutil.copytree(PROGRAMS / "main_iris", folder, ignore=shutil.ignore_patterns("__pycache__"))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": str(temporary)}
    done, batches = run_recorded(folder, env, "custom_estimator.py", "--train_steps", "40", "--batch_size", "20")
    printed = [line for line in done.stdout.splitlines() if line.startswith(("Test set accuracy", "Prediction is"))]
    assert len(printed) == 4, done.stdout
    (model_dir,) = [path for path in temporary.iterdir() if (path / "checkpoint").exists()]  # Estimator's temp dir
    # an ordinary hookrun run directory, which says it came from Python objects YAML cannot name
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["final_global_step"] == 40
    assert any("<lambda>" in item for item in summary["python_objects"]["objects"])
    assert (model_dir / "config.yaml").exists() and list((model_dir / "eval").glob("events.out.tfevents.*"))
    # the batches are the input_fn's own: 40 of 20 rows, each 6 one shuffled epoch of the 120 training rows
    # (the four measures in sorted key order, then the label)
    assert len(batches) == 40
    (train_x, train_y), _ = _iris_data(folder)
    keys = sorted(train_x)
    rows = [(*(float(np.float32(train_x[key][i])) for key in keys), train_y[i]) for i in range(len(train_y))]
    assert len(rows) == 120
    assert_epochs_of(batches, rows, 6)
    assert (model_dir / "model.ckpt-0.index").exists()  # the checkpoint saver's first save: the initial weights
    reference = run_reference(IRIS_REFERENCE, folder, str(model_dir), "20", "40", str(folder / "batches.pickle"),
                              str(tmp_path / "plain"))
    lines = reference.strip().splitlines()
    assert_printed_equal(printed, [line for line in lines if line.startswith(("Test set accuracy", "Prediction is"))])
    final = str(model_dir / "model.ckpt-40")
    for name, value in json.loads(lines[-1]).items():  # the same weights after the same 40 steps
        np.testing.assert_allclose(tf.train.load_variable(final, name), np.array(value), rtol=1e-5, atol=1e-6)


def _iris_data(folder: Path) -> Any:
    """The port's ``iris_data.load_data()`` (the copy in ``folder``), imported without keeping it in sys.modules."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_main_iris_data", folder / "iris_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_data()


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
    lines = run_reference(AUTOS_REFERENCE, folder, str(tmp_path)).strip().splitlines()
    assert printed == [line for line in lines if line.startswith("RMS error")]
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(model_dir))
    for name, value in json.loads(lines[-1]).items():  # the same weights after the same 200 steps
        np.testing.assert_allclose(tf.train.load_variable(latest, name), np.array(value), rtol=1e-5, atol=1e-6)


#: The census program in plain tf.compat.v1: trained from hookrun's initial checkpoint on the batches hookrun's
#: run read (TRAIN_ON_RECORD), saved at each of main()'s checkpoints (50, 100) and evaluated there on the test
#: file as train_and_evaluate evaluates (a MonitoredSession, loss the mean of the batches' losses, as Estimator);
#: then the probabilities of three rows from the last (for the served export). Prints JSON: those evaluations by
#: step, the probabilities and rows, the trained weights.
CENSUS_REFERENCE = TRAIN_ON_RECORD + r"""
import model

job, record, directory = sys.argv[1:4]
model_fn = model.generate_model_fn(embedding_size=8, hidden_units=[10, 7], learning_rate=0.1)


def build():
    features, labels = model.input_fn(["adult.data.csv"], num_epochs=None, batch_size=40)
    return model_fn(features, labels, "train").train_op


saved, weights = train_on_record(build, job + "/model.ckpt-0", record, (50, 100), directory)
out = {"eval": {}, "weights": weights}
for step, checkpoint in saved.items():
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
        out["eval"][step] = {key: float(value) for key, value in final.final_ops_values.items()}
rows = {"age": [25, 52, 40], "hours_per_week": [20, 55, 40], "workclass": ["Private", "Self-emp", "Local-gov"],
        "education": ["HS-grad", "Doctorate", "Bachelors"]}
with tf.Graph().as_default():
    tf.train.get_or_create_global_step()
    spec = model_fn({key: tf.constant(value) for key, value in rows.items()}, None, "infer")
    creator = tf.train.ChiefSessionCreator(checkpoint_filename_with_path=saved[100])
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


def test_census_train_and_evaluate_main_trains_as_a_plain_session_evaluates_each_checkpoint_and_serves(tmp_path):
    import csv

    import tensorflow as tf

    from tests.conftest import event_scalars

    folder = tmp_path / "program"
    shutil.copytree(PROGRAMS / "main_census", folder, ignore=shutil.ignore_patterns("__pycache__", "original"))
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    flags = ["--job-dir", "job", "--num-layers", "2", "--first-layer-size", "10", "--train-steps", "100"]
    _, batches = run_recorded(folder, env, "task.py", *flags)
    job = folder / "job"
    events = job / "eval_census-eval"
    # evaluated after each checkpoint but the first (50, 100: save_checkpoints_steps 50, throttle_secs 600 lets
    # the first pass and the last is evaluated at the end)
    assert [step for step, _ in event_scalars(events, "accuracy")] == [50, 100]
    (export,) = (job / "export" / "census").iterdir()  # FinalExporter: once, at max_steps
    # the batches are the input_fn's own: 100 of 40 rows, each 5 one shuffled epoch of the 200 CSV rows (the
    # columns in sorted key order: age, education, hours_per_week, income_bracket, workclass)
    assert len(batches) == 100
    with (folder / "adult.data.csv").open(newline="") as handle:
        rows = [(int(age), education.encode(), int(hours), income.encode(), workclass.encode())
                for age, workclass, education, hours, income in csv.reader(handle)]
    assert len(rows) == 200
    assert_epochs_of(batches, rows, 5)
    assert (job / "model.ckpt-0.index").exists()  # the checkpoint saver's first save: the initial weights
    reference = run_reference(CENSUS_REFERENCE, folder, str(job), str(folder / "batches.pickle"),
                              str(tmp_path / "plain"))
    expected = json.loads(reference.strip().splitlines()[-1])
    for name in ("accuracy", "auc", "loss"):  # main()'s evaluations: what it reports (its eval events)
        assert event_scalars(events, name) == [
            (step, pytest.approx(expected["eval"][str(step)][name], rel=1e-5, abs=1e-6)) for step in (50, 100)
        ], name
    final = str(job / "model.ckpt-100")
    for name, value in expected["weights"].items():  # the same weights after the same 100 steps
        np.testing.assert_allclose(tf.train.load_variable(final, name), np.array(value), rtol=1e-5, atol=1e-6)
    served = subprocess.run([sys.executable, "-c", CENSUS_SERVE, str(export), json.dumps(expected["rows"])],
                            env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert served.returncode == 0, served.stderr[-3000:]
    result = json.loads(served.stdout.strip().splitlines()[-1])
    assert result["hookrun"] == [] and result["signatures"] == ["prediction", "serving_default"]
    np.testing.assert_allclose(result["probabilities"], expected["probabilities"], rtol=1e-5, atol=1e-6)
