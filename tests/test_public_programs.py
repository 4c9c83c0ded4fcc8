"""TF 1.x Estimator programs of three kinds, run under hookrun as a user would bring them (issues 24 and 25).

Each program is a folder of tests/estimator_programs/ (see its README.md): the TF 1.x program in ``original/``,
its TF 2.21 port beside it, the port's ``hookrun.yaml`` (what main() did with Estimator) and small
deterministic data. The tests check:

- the port differs from the original only by the edits TensorFlow 2.21 itself requires (:func:`port_edits`);
- the port's model_fn and input_fn train under hookrun, with an ``evaluation`` hook, and hookrun's
  evaluation equals a plain ``tf.compat.v1`` ``MonitoredSession`` evaluation of the same model_fn and
  eval input_fn on the same checkpoint, as Estimator's ``evaluate`` computed it;
- without dropout, a plain ``MonitoredTrainingSession`` started from hookrun's initial checkpoint gives the same
  losses and weights: on the input_fn itself (text_terms), or fed the batches hookrun's run read when the
  input_fn shuffles without a seed (iris_custom); and those batches are the input_fn's own, untouched;
- ``hookrun evaluate``/``predict --input-fn`` and ``export`` (``serving_input_fn``) after training agree with the
  run's evaluation, a plain infer-mode session and the served SavedModel;
- the model_fn's own ``tf.compat.v1.summary`` scalars are written (issue 25), and issue 25's "Done when"
  model_fn (regressor_v1) trains, evaluates, predicts and exports unchanged.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hookrun.runner.config import load_config
from tests.conftest import REPO, event_scalars

PROGRAMS = REPO / "tests" / "estimator_programs"

#: program -> (port file, original file) pairs, and the modules its folder provides (dropped from sys.modules
#: after each test, so every test imports its own copy).
PORTS = {
    "cnn_mnist": ["cnn_mnist.py"],
    "text_terms": ["text_terms.py"],
    "iris_custom": ["custom_estimator.py", "iris_data.py"],
    "regressor_v1": ["regressor_v1.py"],
}
MODULES = {
    "cnn_mnist": ["cnn_mnist", "cnn_mnist_inputs", "digits", "cnn_mnist_recorder"],
    "text_terms": ["text_terms", "make_reviews"],
    "iris_custom": ["custom_estimator", "iris_data", "iris_inputs", "iris_custom_recorder"],
    "regressor_v1": ["regressor_v1"],
}

# --- the diff between an original and its port -------------------------------------------------------------

#: The lines a port may add: hookrun's EstimatorSpec and ModeKeys, and its ``tf.estimator.export`` (tf.estimator is
#: gone from TF 2.16 on).
ADDED_IMPORTS = {"from hookrun.runner import EstimatorSpec, ModeKeys", "from hookrun.runner.trained import serving"}

#: Edits TensorFlow 2.21 requires, each as (name, port form, original form): a changed line must turn back
#: into the original line when these are undone, in this order.
UNDO: list[tuple[str, str, str]] = [
    ("Dataset.make_one_shot_iterator() became a function", r"tf\.compat\.v1\.data\.make_one_shot_iterator\((\w+)\)",
     r"\1.make_one_shot_iterator()"),
    ("the v1 API lives in tf.compat.v1", r"\btf\.compat\.v1\.", "tf."),
    ("hookrun's EstimatorSpec", r"(?<![\w.])EstimatorSpec\(", "tf.estimator.EstimatorSpec("),
    ("hookrun's ModeKeys", r"(?<![\w.])ModeKeys\.", "tf.estimator.ModeKeys."),
    ("hookrun's tf.estimator.export", r"(?<![\w.])serving\.", "tf.estimator.export."),
]


def port_edits(original: str, port: str) -> list[str]:
    """The edits ``port`` makes to ``original`` that are not on the allow-list, one line each (empty: allowed).

    Allowed: a changed line that equals the original line once the :data:`UNDO` substitutions are undone,
    the :data:`ADDED_IMPORTS` lines, and blank lines added or removed around it (isort's blocks). Anything else
    (a deleted or added statement, a cast, a renamed layer) is reported with its line numbers.
    """
    before, after = original.splitlines(), port.splitlines()
    problems: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed = [line for line in before[i1:i2] if line.strip()]
        added = [line for line in after[j1:j2] if line.strip() and line not in ADDED_IMPORTS]
        if len(removed) != len(added):
            problems.append(f"original {i1 + 1}-{i2} -> port {j1 + 1}-{j2}: lines added or removed: {added or removed}")
            continue
        for old, new in zip(removed, added, strict=True):
            undone = new
            for _, pattern, replacement in UNDO:
                undone = re.sub(pattern, replacement, undone)
            if undone != old:
                problems.append(f"not an allowed edit: {old.strip()!r} -> {new.strip()!r}")
    return problems


@pytest.mark.parametrize(
    ("program", "file"), [(program, file) for program, files in PORTS.items() for file in files]
)
def test_a_port_changes_only_what_tensorflow_2_21_requires(program, file):
    original = (PROGRAMS / program / "original" / file).read_text()
    port = (PROGRAMS / program / file).read_text()
    assert port != original
    assert port_edits(original, port) == []


def test_the_diff_check_refuses_edits_a_user_would_not_expect():
    original = (PROGRAMS / "cnn_mnist" / "original" / "cnn_mnist.py").read_text()
    port = (PROGRAMS / "cnn_mnist" / "cnn_mnist.py").read_text()
    named = port.replace("tf.compat.v1.layers.dense(inputs=dropout, units=10)",
                         "tf.compat.v1.layers.dense(inputs=dropout, units=10, name='logits')")
    cast = port.replace('    images = tf.reshape(features["x"], [-1, 28, 28, 1])',
                        '    images = tf.reshape(tf.cast(features["x"], tf.float32), [-1, 28, 28, 1])')
    moved = port.replace("        return EstimatorSpec(mode=mode, predictions=predictions)\n", "", 1)
    for broken in (named, cast, moved):
        assert broken != port
        assert port_edits(original, broken), broken


# --- running a program -------------------------------------------------------------------------------------


@dataclass
class Program:
    """A program's folder copied into a test's tmp_path, its config loaded, its functions imported.

    Attributes:
        name: the folder's name under tests/estimator_programs/.
        directory: the copy (config, port, data).
        loaded: its ``hookrun.yaml``, loaded.

    ``params`` is ``graph.params`` as the functions receive them, ``${config_dir}`` replaced.
    """

    name: str
    directory: Path
    loaded: Any

    @property
    def params(self) -> dict[str, Any]:
        def replaced(value: Any) -> Any:
            if isinstance(value, str):
                return value.replace("${config_dir}", str(self.directory))
            if isinstance(value, list):
                return [replaced(item) for item in value]
            return value

        return {key: replaced(value) for key, value in self.loaded.config.graph.params.items()}

    def function(self, path: str) -> Callable[..., Any]:
        """The function named ``module:function`` in the config, as hookrun imports it (beside the config)."""
        module, name = path.split(":")
        if str(self.directory) not in sys.path:
            sys.path.insert(0, str(self.directory))
        return getattr(importlib.import_module(module), name)

    @property
    def model_fn(self) -> Callable[..., Any]:
        return self.function(self.loaded.config.graph.builder)

    @property
    def input_fn(self) -> Callable[..., Any]:
        return self.function(self.loaded.config.data.input_fn)

    @property
    def eval_input_fn(self) -> Callable[..., Any]:
        return self.function(self.loaded.config.data.eval_input_fn)


def call_named(function: Callable[..., Any], **available: Any) -> Any:
    """``function`` called with the arguments it names among ``available``, by name, as Estimator called them."""
    names = inspect.signature(function).parameters
    return function(**{key: value for key, value in available.items() if key in names})


@pytest.fixture
def programs(tmp_path: Path) -> Iterator[Callable[[str], Program]]:
    """``programs(name)`` copies a program (without ``original/``) into tmp_path, writes its data, loads its config."""
    used: list[str] = []

    def make(name: str) -> Program:
        directory = tmp_path / name
        shutil.copytree(PROGRAMS / name, directory, ignore=shutil.ignore_patterns("original", "__pycache__"))
        used.append(str(directory))
        if name == "text_terms":
            sys.path.insert(0, str(directory))
            (directory / "data").mkdir()
            importlib.import_module("make_reviews").write_reviews(directory / "data")
        return Program(name, directory, load_config(directory / "hookrun.yaml"))

    yield make
    for modules in MODULES.values():
        for module in modules:
            sys.modules.pop(module, None)
    sys.path[:] = [entry for entry in sys.path if entry not in used]


@pytest.fixture
def train_program(programs, tmp_path, captured) -> Callable[[str], tuple[Program, Any, Path]]:
    """``train_program(name)``: the program trained by hookrun's runner into tmp_path/run."""
    from hookrun.runner.trainer import train

    def run(name: str) -> tuple[Program, Any, Path]:
        program = programs(name)
        run_dir = tmp_path / "run"
        result = train(program.loaded, run_dir=run_dir, console=captured.console)
        return program, result, run_dir

    return run


# --- the plain tf.compat.v1 reference ----------------------------------------------------------------------


def plain_evaluate(program: Program, checkpoint: str) -> dict[str, float]:
    """The model_fn's eval-mode metrics over the whole eval input_fn, restored from ``checkpoint``.

    As Estimator's ``evaluate`` computed them: a fresh graph, a ``MonitoredSession`` restoring the checkpoint,
    every ``eval_metric_ops`` update run to the end of the data, the values read by a ``FinalOpsHook``; the
    loss is ``tf.compat.v1.metrics.mean(loss)`` weighted by each batch's rows (hookrun's ``val_loss``; equal
    to Estimator's unweighted mean here, where every eval batch has the same size).
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    params = program.params
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        dataset = call_named(program.eval_input_fn, params=params, mode="eval", config=None)
        features, labels = v1.data.make_one_shot_iterator(dataset).get_next()
        spec = call_named(program.model_fn, features=features, labels=labels, mode="eval", params=params, config=None)
        rows = tf.cast(tf.shape(tf.nest.flatten(labels)[0])[0], tf.float32)
        metrics = {"val_loss": v1.metrics.mean(spec.loss, weights=rows)}
        metrics.update({f"val_{name}": pair for name, pair in spec.eval_metric_ops.items()})
        final = v1.train.FinalOpsHook({name: value for name, (value, _) in metrics.items()})
        creator = v1.train.ChiefSessionCreator(checkpoint_filename_with_path=checkpoint)
        with v1.train.MonitoredSession(session_creator=creator, hooks=[final]) as session:
            while not session.should_stop():
                session.run([update for _, update in metrics.values()])
    return {name: float(value) for name, value in final.final_ops_values.items()}


def plain_predict(program: Program, input_fn: str, checkpoint: str) -> list[dict[str, np.ndarray]]:
    """The model_fn's infer-mode predictions dict over ``input_fn``'s whole dataset, restored from ``checkpoint``,
    one dict per example, as Estimator's ``predict`` yielded them (a fresh graph, a ``MonitoredSession``)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    params = program.params
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        dataset = call_named(program.function(input_fn), params=params, mode="infer", config=None)
        element = v1.data.make_one_shot_iterator(dataset).get_next()
        features = element[0] if isinstance(element, tuple) else element
        spec = call_named(program.model_fn, features=features, labels=None, mode="infer", params=params, config=None)
        found: list[dict[str, np.ndarray]] = []
        creator = v1.train.ChiefSessionCreator(checkpoint_filename_with_path=checkpoint)
        with v1.train.MonitoredSession(session_creator=creator) as session:
            while not session.should_stop():
                batch = session.run(spec.predictions)
                rows = len(next(iter(batch.values())))
                found += [{key: value[i] for key, value in batch.items()} for i in range(rows)]
    return found


def plain_train(program: Program, initial_checkpoint: str, steps: int) -> tuple[list[float], dict[str, np.ndarray]]:
    """``steps`` steps of the model_fn on its input_fn in a plain ``MonitoredTrainingSession``.

    Every variable starts from ``initial_checkpoint`` (hookrun's ``model.ckpt-0``), restored by the scaffold's
    ``init_fn``. Returns each step's loss and the trainable variables at the end, by name.
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    params = program.params
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        v1.train.get_or_create_global_step()
        result = call_named(program.input_fn, params=params, mode="train", config=None)
        if isinstance(result, tf.data.Dataset):
            result = v1.data.make_one_shot_iterator(result).get_next()
        features, labels = result
        spec = call_named(program.model_fn, features=features, labels=labels, mode="train", params=params, config=None)
        saver = v1.train.Saver()
        scaffold = v1.train.Scaffold(saver=saver, init_fn=lambda _, session: saver.restore(session, initial_checkpoint))
        with v1.train.MonitoredTrainingSession(
            scaffold=scaffold, checkpoint_dir=None, save_summaries_steps=None, log_step_count_steps=None
        ) as session:
            losses = [float(session.run([spec.train_op, spec.loss])[1]) for _ in range(steps)]
            weights = session.run({v.op.name: v for v in v1.trainable_variables()})
    return losses, weights


def plain_train_on(
    program: Program, batches: list[tuple[Any, Any]], initial_checkpoint: str
) -> tuple[list[float], dict[str, np.ndarray]]:
    """The model_fn trained in a plain ``MonitoredTrainingSession`` on given ``(features, labels)`` batches, fed.

    For a program whose input_fn shuffles without a seed (its order then depends on how many ops the graph
    holds): the batches hookrun's run read, recorded by :data:`RECORDER`, fed to placeholders of their
    dtypes. Every variable starts from ``initial_checkpoint``. Returns each step's loss and the trainable
    variables at the end.
    """
    import tensorflow as tf

    v1 = tf.compat.v1

    def placeholder(value: np.ndarray) -> Any:
        return v1.placeholder(tf.as_dtype(value.dtype), [None, *value.shape[1:]])

    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        first_features, first_labels = batches[0]
        features = tf.nest.map_structure(placeholder, first_features)
        labels = placeholder(first_labels)
        spec = call_named(
            program.model_fn, features=features, labels=labels, mode="train", params=program.params, config=None
        )
        saver = v1.train.Saver()
        scaffold = v1.train.Scaffold(saver=saver, init_fn=lambda _, session: saver.restore(session, initial_checkpoint))
        losses = []
        with v1.train.MonitoredTrainingSession(
            scaffold=scaffold, checkpoint_dir=None, save_summaries_steps=None, log_step_count_steps=None
        ) as session:
            for batch_features, batch_labels in batches:
                feed = dict(zip(tf.nest.flatten(features), tf.nest.flatten(batch_features), strict=True))
                feed[labels] = batch_labels
                losses.append(float(session.run([spec.train_op, spec.loss], feed_dict=feed)[1]))
            weights = session.run({v.op.name: v for v in v1.trainable_variables()})
    return losses, weights


def record_inputs(program: Program, module: str, function: str) -> None:
    """Make ``program``'s config train through :data:`RECORDER` (module ``<program>_recorder``)."""
    recorder = f"{program.name}_recorder"
    (program.directory / f"{recorder}.py").write_text(RECORDER.format(module=module, function=function))
    config = (program.directory / "hookrun.yaml").read_text()
    config = config.replace(f"builder: {module}:{function}", f"builder: {recorder}:model_fn")
    config += f"  - {{type: custom, class: '{recorder}:Record', name: record}}\n"
    (program.directory / "hookrun.yaml").write_text(config)


#: A graph.builder wrapper and a custom hook recording what the model_fn's train call read at every step.
RECORDER = """
import inspect

import tensorflow as tf

import {module}

INPUTS = {{}}
BATCHES = []


def model_fn(features, labels, mode, params):
    INPUTS[mode] = (features, labels)
    target = {module}.{function}
    given = dict(features=features, labels=labels, mode=mode, params=params)
    return target(**{{k: v for k, v in given.items() if k in inspect.signature(target).parameters}})


class Record(tf.compat.v1.train.SessionRunHook):
    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(INPUTS["train"])

    def after_run(self, run_context, run_values):
        BATCHES.append(run_values.results)
"""


def checkpoint(run_dir: Path, step: int) -> str:
    path = run_dir / f"model.ckpt-{step}"
    assert Path(f"{path}.index").exists(), sorted(p.name for p in run_dir.iterdir())
    return str(path)


def assert_evaluations_match(program: Program, result: Any, run_dir: Path) -> None:
    """Every evaluation hookrun ran equals the plain evaluation of the checkpoint of its step."""
    assert result.evaluations, "the evaluation hook did not run"
    for evaluation in result.evaluations:
        plain = plain_evaluate(program, checkpoint(run_dir, evaluation["step"]))
        got = {name: evaluation[name] for name in plain}
        assert got == pytest.approx(plain, rel=1e-5, abs=1e-6), evaluation["step"]


# --- the programs ------------------------------------------------------------------------------------------


def test_text_terms_trains_evaluates_predicts_exports_and_matches_plain_tf(train_program, tmp_path):
    """Variable-length terms (a SparseTensor of strings), a vocabulary file, the optimizer built under
    ``mode != PREDICT`` and a summary scalar: the program's own input_fn, as it is, for train and eval."""
    program, result, run_dir = train_program("text_terms")
    assert (result.final_global_step, result.end_of_data) == (24, True)  # 2 epochs of 12 batches
    assert [e["step"] for e in result.evaluations] == [8, 16, 24]
    assert set(result.evaluations[-1]) >= {"val_loss", "val_accuracy", "val_auc"}
    assert_evaluations_match(program, result, run_dir)

    # training: from the same initial weights, a plain MonitoredTrainingSession gives the same losses and weights
    losses, weights = plain_train(program, checkpoint(run_dir, 0), 24)
    assert [row["mean_loss"] for row in result.history] == pytest.approx(losses, rel=1e-5)
    import tensorflow as tf

    for name, value in weights.items():
        np.testing.assert_allclose(tf.train.load_variable(checkpoint(run_dir, 24), name), value, rtol=1e-5, atol=1e-6)

    # the model_fn's own summary, every 4 steps from the first, at the steps TF's SummarySaverHook wrote it
    assert [step for step, _ in event_scalars(run_dir / "train", "mean_probability")][:3] == [1, 5, 9]

    check_text_terms_after_training(program, result, run_dir, tmp_path)


def test_cnn_mnist_trains_evaluates_predicts_and_exports(programs, tmp_path, captured):
    """The layers tutorial's CNN, default layer names, fed from NumPy arrays (main()'s numpy_input_fn)."""
    from hookrun.runner.trainer import train

    program = programs("cnn_mnist")
    record_inputs(program, "cnn_mnist", "cnn_model_fn")
    run_dir = tmp_path / "run"
    result = train(load_config(program.directory / "hookrun.yaml"), run_dir=run_dir, console=captured.console)
    assert result.final_global_step == 8
    # the images reach the model_fn as the arrays held them: {"x": float32 [32, 784]}, int32 labels, each row
    # an image of the training set with its own label
    images, labels = importlib.import_module("digits").load_digits("train")
    known = {image.tobytes(): label for image, label in zip(images, labels, strict=True)}
    batches = importlib.import_module("cnn_mnist_recorder").BATCHES
    assert len(batches) == 8
    for features, batch_labels in batches:
        assert list(features) == ["x"] and features["x"].shape == (32, 784) and features["x"].dtype == np.float32
        found = [known.get(image.tobytes()) for image in features["x"]]
        assert None not in found, "an image the model_fn read is not one of the training images"
        assert found == list(batch_labels)
    assert [e["step"] for e in result.evaluations] == [4, 8]
    # dropout in train mode draws from an op seed TF takes from the graph's op count (hookrun's graph holds
    # more ops than a plain script's): the training steps cannot be compared bit for bit; the evaluations can
    assert_evaluations_match(program, result, run_dir)
    check_evaluate_and_predict(
        program, result, run_dir, tmp_path, "cnn_mnist_inputs:eval_input_fn", "cnn_mnist_inputs:eval_input_fn", 64,
        serving_fn="cnn_mnist_inputs:serving_input_fn",
    )


def test_iris_custom_estimator_trains_evaluates_predicts_and_writes_its_summary(programs, tmp_path, captured):
    """Feature columns through ``input_layer``, a pandas-style dict input_fn returning tensors, a summary scalar."""
    import tensorflow as tf

    from hookrun.runner.trainer import train

    program = programs("iris_custom")
    # record the batches the model_fn reads (its input_fn shuffles without a seed), through a builder wrapper
    record_inputs(program, "iris_inputs", "my_model")
    run_dir = tmp_path / "run"
    result = train(load_config(program.directory / "hookrun.yaml"), run_dir=run_dir, console=captured.console)
    assert result.final_global_step == 20
    assert_evaluations_match(program, result, run_dir)
    assert result.evaluations[-1]["val_accuracy"] > 0.5  # three classes, 30 test rows
    assert [step for step, _ in event_scalars(run_dir / "train", "accuracy")][:2] == [1, 6]

    # the model_fn got the input_fn's own structure and values, untouched: a dict of float32 columns and int32
    # class ids (as from_tensor_slices made them from Python numbers), every row one of the training file's
    batches = importlib.import_module("iris_custom_recorder").BATCHES
    features, labels = batches[0]
    assert sorted(features) == ["PetalLength", "PetalWidth", "SepalLength", "SepalWidth"]
    assert {value.dtype for value in features.values()} == {np.dtype("float32")} and labels.dtype == np.int32
    (train_x, train_y), _ = importlib.import_module("iris_data").load_data()
    keys = sorted(train_x)
    known = {(*(np.float32(train_x[key][i]) for key in keys), train_y[i]) for i in range(len(train_y))}
    for batch_features, batch_labels in batches:
        for i in range(len(batch_labels)):
            assert (*(batch_features[key][i] for key in keys), batch_labels[i]) in known
    # fed back to a plain session from the same initial weights: the same losses and weights
    losses, weights = plain_train_on(program, batches, checkpoint(run_dir, 0))
    assert [row["mean_loss"] for row in result.history] == pytest.approx(losses, rel=1e-5)
    for name, value in weights.items():
        np.testing.assert_allclose(tf.train.load_variable(checkpoint(run_dir, 20), name), value, rtol=1e-5, atol=1e-6)
    check_evaluate_and_predict(
        program, result, run_dir, tmp_path, "iris_inputs:eval_input_fn", "iris_inputs:predict_input_fn", 3
    )


def test_an_eval_input_fn_returning_tensors_is_refused_in_one_line(programs, tmp_path, captured):
    """iris_data.eval_input_fn returns ``get_next()`` tensors, which Estimator accepted; hookrun refuses them for
    evaluation (it re-reads the dataset at each evaluation) with a one-line error naming the function."""
    from hookrun.common.errors import HookrunError
    from hookrun.runner.trainer import train

    program = programs("iris_custom")
    glue = program.directory / "iris_inputs.py"
    glue.write_text(glue.read_text() + (
        "\n\ndef tensors_eval_input_fn(params):\n"
        "    _, (test_x, test_y) = iris_data.load_data()\n"
        "    return iris_data.eval_input_fn(test_x, test_y, params['batch_size'])\n"
    ))
    config = (program.directory / "hookrun.yaml").read_text().replace(
        "eval_input_fn: iris_inputs:eval_input_fn", "eval_input_fn: iris_inputs:tensors_eval_input_fn"
    )
    (program.directory / "hookrun.yaml").write_text(config)
    with pytest.raises(HookrunError, match="tensors_eval_input_fn returned a tuple of tensors.*must return a tf.data"):
        train(load_config(program.directory / "hookrun.yaml"), run_dir=tmp_path / "run", console=captured.console)


def test_issue_25_done_when_program_trains_with_evaluation_evaluates_predicts_and_exports(
    tmp_path, linear_csv, run_train, monkeypatch, request
):
    """A model_fn that names no layers, builds its optimizer under ``mode != PREDICT`` and writes a
    ``tf.compat.v1.summary`` scalar, as it is: trains with an ``evaluation`` hook, then ``hookrun evaluate``,
    ``predict`` and ``export`` (the built-in CSV reader, where those commands work today)."""
    import tensorflow as tf
    import yaml

    from hookrun.runner import evaluate, export, predict

    shutil.copy(PROGRAMS / "regressor_v1" / "regressor_v1.py", tmp_path / "regressor_v1.py")
    request.addfinalizer(lambda: sys.modules.pop("regressor_v1", None))
    config = {
        "name": "regressor-v1",
        "graph": {"builder": "regressor_v1:model_fn", "features": "dense",  # its model_fn takes one matrix
                  "params": {"hidden_units": [8], "learning_rate": 0.05}},
        "data": {"train": "data.csv", "label": "y", "validation_split": 0.25, "batch_size": 16, "epochs": 3,
                 "seed": 0},
        "hooks": [
            {"type": "evaluation", "every_n_steps": 5},
            {"type": "summary_saver", "save_steps": 5},
            {"type": "checkpoint_saver", "save_steps": 1000},
        ],
    }
    (tmp_path / "hookrun.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run_dir = tmp_path / "run"
    result = run_train(load_config(tmp_path / "hookrun.yaml"), run_dir=run_dir)
    assert result.evaluations and result.evaluations[-1]["step"] == result.final_global_step
    assert [step for step, _ in event_scalars(run_dir / "train", "batch_rmse")][:2] == [1, 6]

    # evaluate/predict/export load the run's own config.yaml: a builder that sat beside the original config
    # must be importable (PYTHONPATH), as docs/trained-model.md says
    monkeypatch.syspath_prepend(str(tmp_path))
    evaluated = evaluate(run_dir)
    last = result.evaluations[-1]
    assert evaluated.global_step == last["step"]
    assert evaluated.metrics["val_rmse"] == pytest.approx(last["val_rmse"], rel=1e-5)

    predicted = predict(run_dir, [str(linear_csv)], tmp_path / "predictions.csv")
    exported = export(run_dir, tmp_path / "export")
    served = tf.saved_model.load(str(exported.output)).signatures["serving_default"]
    rows = np.loadtxt(linear_csv, delimiter=",", skiprows=1, dtype=np.float32)[:5]
    outputs = served(a=tf.constant(rows[:, 0]), b=tf.constant(rows[:, 1]))
    (served_values,) = [value.numpy().reshape(-1) for value in outputs.values()]
    lines = (tmp_path / "predictions.csv").read_text().splitlines()
    header, first = lines[0].split(","), [line.split(",") for line in lines[1:6]]
    column = next(i for i, name in enumerate(header) if name != "row")
    assert predicted.rows == len(lines) - 1
    np.testing.assert_allclose(served_values, [float(row[column]) for row in first], rtol=1e-4)


# --- after training: evaluate, predict, export (issue 24's --input-fn and serving_input_fn) ----------------


def check_text_terms_after_training(program: Program, result: Any, run_dir: Path, tmp_path: Path) -> None:
    """``hookrun evaluate``/``predict --input-fn`` and ``export`` with ``graph.serving_input_fn``, as Estimator's
    ``evaluate``, ``predict`` and ``export_saved_model`` ran them; the export carries the vocabulary file.

    The config's vocabulary path is ``${config_dir}/terms.txt``: the run directory's saved config names the
    original config's directory (it named the run directory, where no terms.txt is, before)."""
    import json

    import tensorflow as tf

    from hookrun.cli.app import app

    program.function("text_terms:input_fn")  # the program's folder on sys.path, as PYTHONPATH would put it
    runner = CliRunner(env={"COLUMNS": "200"})

    done = runner.invoke(app, ["evaluate", str(run_dir), "--input-fn", "text_terms:input_fn"])
    assert done.exit_code == 0, done.output
    evaluated = json.loads((run_dir / "eval-24-text_terms.input_fn.json").read_text())
    assert (evaluated["global_step"], evaluated["rows"]) == (24, 64)
    metrics = evaluated["metrics"]
    last = result.evaluations[-1]
    for name in ("val_loss", "val_accuracy", "val_auc"):
        assert metrics[name] == pytest.approx(last[name], rel=1e-5), name

    output = tmp_path / "predictions.jsonl"
    done = runner.invoke(app, ["predict", str(run_dir), "--input-fn", "text_terms:input_fn", "--output", str(output)])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(records) == 64 and set(records[0]) == {"probabilities", "class_ids"}
    plain = plain_predict(program, "text_terms:input_fn", checkpoint(run_dir, 24))
    np.testing.assert_allclose([r["probabilities"] for r in records], [p["probabilities"] for p in plain], rtol=1e-5)

    done = runner.invoke(app, ["export", str(run_dir), "--output", str(tmp_path / "export")])
    assert done.exit_code == 0, done.output
    (program.directory / "terms.txt").rename(tmp_path / "moved-terms.txt")  # the export must not need it
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    examples = []
    for terms, _ in importlib.import_module("make_reviews").reviews("eval"):
        example = tf.train.Example()
        example.features.feature["terms"].bytes_list.value.extend(terms)
        examples.append(example.SerializeToString())
    outputs = served(examples=tf.constant(examples))
    np.testing.assert_allclose(
        outputs["probabilities"].numpy().reshape(-1), [r["probabilities"][0] for r in records], rtol=1e-5
    )
    assert outputs["class_ids"].numpy().reshape(-1).tolist() == [r["class_ids"][0] for r in records]


def test_the_saved_config_names_the_original_config_dir_and_keeps_the_other_placeholders(tmp_path, linear_csv):
    """A run directory's config.yaml replaces ``${config_dir}`` (in graph.params and custom hook args) by the
    original config's directory, which it would otherwise mean the run directory; ``${run_dir}`` and ``$$`` stay."""
    import yaml

    from hookrun.config_schemas.interpolation import interpolate
    from hookrun.runner.run_dir.saved_config import self_contained_yaml
    from tests.conftest import base_config

    tmp_path = tmp_path / "a $ in the name"  # a "$" in the directory is written as "$$", read back as "$"
    tmp_path.mkdir()
    (tmp_path / "hooks_here.py").write_text(
        "class Hook:\n    def __init__(self, **kwargs):\n        pass\n\n\n"
        "def build(features, labels, params):\n    pass\n"
    )
    params = {"vocab": "${config_dir}/terms.txt", "out": "${run_dir}/x", "cost": "$${config_dir}"}
    config = base_config(
        graph={"builder": "hooks_here:build", "params": params},
        hooks=[{"type": "custom", "class": "hooks_here:Hook", "args": {"files": ["${config_dir}/a.txt"]}}],
    )
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    saved = yaml.safe_load(self_contained_yaml(load_config(tmp_path / "config.yaml")))
    escaped = str(tmp_path).replace("$", "$$")
    assert saved["graph"]["params"] == {**params, "vocab": f"{escaped}/terms.txt"}
    assert saved["hooks"][0]["args"] == {"files": [f"{escaped}/a.txt"]}
    values = {"config_dir": "/elsewhere", "run_dir": "/run", "steps_per_run": "1"}
    assert interpolate(saved["graph"]["params"]["vocab"], values) == f"{tmp_path}/terms.txt"


def check_evaluate_and_predict(
    program: Program, result: Any, run_dir: Path, tmp_path: Path, eval_fn: str, predict_fn: str, rows: int,
    serving_fn: str | None = None,
) -> None:
    """``Estimator.evaluate`` and ``predict`` as main() called them: ``hookrun evaluate`` gives the training run's
    last evaluation; ``hookrun predict`` writes every key of the predictions dict per example (arrays included),
    equal to a plain infer-mode run of the same checkpoint; an export (``serving_fn``) serves what predict wrote."""
    import json

    import tensorflow as tf

    from hookrun.cli.app import app

    program.function(eval_fn)  # the program's folder on sys.path, as PYTHONPATH would put it
    runner = CliRunner(env={"COLUMNS": "200"})
    done = runner.invoke(app, ["evaluate", str(run_dir), "--input-fn", eval_fn])
    assert done.exit_code == 0, done.output
    step = result.final_global_step
    evaluated = json.loads(next(run_dir.glob(f"eval-{step}-*.json")).read_text())["metrics"]
    last = result.evaluations[-1]
    assert evaluated == pytest.approx({key: last[key] for key in evaluated}, rel=1e-5)

    output = tmp_path / "predictions.jsonl"
    done = runner.invoke(app, ["predict", str(run_dir), "--input-fn", predict_fn, "--output", str(output)])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(records) == rows
    classes = "classes" if program.name == "cnn_mnist" else "class_ids"
    plain = plain_predict(program, predict_fn, checkpoint(run_dir, step))
    for record, expected in zip(records, plain, strict=True):
        assert np.ravel(record[classes])[0] == int(np.argmax(record["probabilities"])) == np.ravel(expected[classes])[0]
        np.testing.assert_allclose(record["probabilities"], expected["probabilities"], rtol=1e-4, atol=1e-6)
    if serving_fn is None:
        return
    done = runner.invoke(
        app, ["export", str(run_dir), "--output", str(tmp_path / "export"), "--serving-input-fn", serving_fn]
    )
    assert done.exit_code == 0, done.output
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    images, _ = importlib.import_module("digits").load_digits("eval")
    probabilities = served(x=tf.constant(images))["probabilities"].numpy()
    np.testing.assert_allclose(probabilities, [r["probabilities"] for r in records], rtol=1e-4, atol=1e-6)
