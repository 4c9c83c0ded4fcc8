"""A run trained from ``data.input_fn``, after training: ``evaluate``/``predict --input-fn`` and ``export`` with
``graph.serving_input_fn`` (issue 24). The program is tests/serving_program.py; every value is checked against
the checkpoint's weights run through the model in NumPy, the export by loading it in a fresh process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.runner.config import load_config
from tests.conftest import REPO

PROGRAM = REPO / "tests" / "serving_program.py"
cli = CliRunner(env={"COLUMNS": "200"})

#: Every test here shares the module-scoped ``trained`` run: one pytest-xdist worker, so it trains once.
pytestmark = pytest.mark.xdist_group("test_input_fn_trained")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``(directory, module)``: 8 steps of the program (checkpoint at step 8) in ``directory/run``; never changed."""
    from hookrun.runner.trainer import train

    where = tmp_path_factory.mktemp("trained")
    module = f"serving_program_{uuid.uuid4().hex[:8]}"
    shutil.copy(PROGRAM, where / f"{module}.py")
    config = {
        "name": "serving",
        "graph": {"builder": f"{module}:model_fn", "serving_input_fn": f"{module}:serving_input_fn"},
        "data": {"input_fn": f"{module}:input_fn", "eval_input_fn": f"{module}:eval_input_fn", "seed": 0},
        "hooks": [{"type": "checkpoint_saver", "save_steps": 100}],
    }
    (where / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = train(load_config(where / "config.yaml"), run_dir=where / "run")
    assert result.final_global_step == 8
    yield where, module
    sys.modules.pop(module, None)


@pytest.fixture
def run(trained, monkeypatch):
    """The trained run; the current directory is the program's (its modules import from there)."""
    where, _module = trained
    monkeypatch.chdir(where)
    return where / "run"


@pytest.fixture
def program(trained, run):
    return sys.modules[trained[1]] if trained[1] in sys.modules else __import__(trained[1])


def weights(run) -> dict[str, np.ndarray]:
    import tensorflow as tf

    prefix = tf.train.latest_checkpoint(str(run))
    return {name: tf.train.load_variable(prefix, name) for name in ("w", "b")}


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_evaluate_defaults_to_the_eval_input_fn_and_takes_another(run, program, trained):
    from hookrun.runner.trained.evaluate import evaluate

    module = trained[1]
    w = weights(run)
    for given, (features, labels) in [(None, program.rows(40, 1)), (f"{module}:input_fn", program.rows(64, 0))]:
        result = evaluate(run, input_fn=given)
        logits = program.numpy_model(w, features)
        repeats = 2 if given else 1  # input_fn repeats its 64 rows twice
        assert result.rows == len(labels) * repeats
        accuracy = float(np.mean(logits.argmax(1) == labels))
        cross_entropy = float(np.mean(-np.log(softmax(logits)[np.arange(len(labels)), labels])))
        assert result.metrics["val_accuracy"] == pytest.approx(accuracy, abs=1e-6)
        assert result.metrics["val_loss"] == pytest.approx(cross_entropy, rel=1e-5)
        assert json.loads((run / result.output).read_text())["metrics"] == result.metrics
    assert [p.name for p in sorted(run.glob("eval-8*.json"))] == [f"eval-8-{module}.input_fn.json", "eval-8.json"]


def test_evaluations_of_two_functions_of_one_package_go_to_two_files():
    from hookrun.runner.trained.evaluate import eval_file_name

    names = {eval_file_name(6, [f"tests.estimator.tiny_model:{fn}"], input_fn=True) for fn in ("train", "eval")}
    assert names == {"eval-6-tests.estimator.tiny_model.train.json", "eval-6-tests.estimator.tiny_model.eval.json"}
    assert eval_file_name(6, ["/data/test.csv.gz"]) == "eval-6-test.json"  # a data file: its name before the first .
    assert eval_file_name(6, None) == "eval-6.json"


def test_predict_writes_every_key_per_example_arrays_included(run, program, trained, tmp_path):
    module = trained[1]
    out = tmp_path / "preds.jsonl"
    program.PREDICTED_BATCHES.clear()
    done = cli.invoke(app, ["predict", str(run), "--input-fn", f"{module}:predict_input_fn", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "10 examples predicted" in done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    features, _ = program.rows(10, 2)
    probabilities = softmax(program.numpy_model(weights(run), features))
    assert len(records) == 10  # batches 4, 4, 2, one record per example, as Estimator.predict yielded them
    assert [list(r) for r in records] == [["class", "probabilities", "city"]] * 10
    np.testing.assert_allclose([r["probabilities"] for r in records], probabilities, rtol=1e-5)
    assert [r["class"] for r in records] == probabilities.argmax(1).tolist()
    assert [r["city"] for r in records] == [c.decode() for c in features["city"]]
    assert program.PREDICTED_BATCHES == [4, 4, 2]  # the model_fn's prediction_hooks ran around each batch

    csv_out = tmp_path / "preds.csv"
    refused = cli.invoke(app, ["predict", str(run), "--input-fn", f"{module}:predict_input_fn", "-o", str(csv_out)])
    assert refused.exit_code == 2
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "predictions['probabilities'] holds 2 values per example" in lines[0]
    assert "--output preds.jsonl" in lines[0] and not csv_out.exists()


def test_predict_csv_of_scalar_keys(tmp_path, write_module, run_train, monkeypatch):
    """A model_fn whose predictions are one value per example writes a .csv, one row per example."""
    from hookrun.runner.trained.predict import predict

    source = PROGRAM.read_text().replace(
        '"probabilities": probabilities, "city"', '"p_yes": probabilities[:, 1], "city"'
    )
    module = write_module("scalar_program", source)
    config = {
        "name": "scalar",
        "graph": {"builder": f"{module}:model_fn"},
        "data": {"input_fn": f"{module}:input_fn", "seed": 0},
        "hooks": [{"type": "stop_at_step", "last_step": 2}, {"type": "checkpoint_saver", "save_steps": 100}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    run_train(load_config(tmp_path / "config.yaml"))
    monkeypatch.chdir(tmp_path)
    result = predict(tmp_path / "run", None, tmp_path / "p.csv", input_fn=f"{module}:predict_input_fn")
    text = (tmp_path / "p.csv").read_text().splitlines()
    assert text[0] == "class,p_yes,city" and len(text) == 11 and result.columns == ["class", "p_yes", "city"]
    assert [line.split(",")[2] for line in text[1:]] == [c.decode() for c in sys.modules[module].rows(10, 2)[0]["city"]]


LOAD_AND_CALL = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    directory, x, city = sys.argv[1], np.array(json.loads(sys.argv[2]), np.float32), json.loads(sys.argv[3])
    examples = [
        tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=row)),
            "city": tf.train.Feature(bytes_list=tf.train.BytesList(value=[c.encode()])),
        })).SerializeToString()
        for row, c in zip(x.tolist(), city)
    ]
    loaded = tf.saved_model.load(directory)
    out = {}
    out["serving_default"] = {k: v.numpy().tolist() for k, v in loaded.signatures["serving_default"](
        examples=tf.constant(examples)).items()}
    out["classify"] = {k: v.numpy().tolist() for k, v in loaded.signatures["classify"](
        inputs=tf.constant(examples)).items()}
    out["regress"] = {k: v.numpy().tolist() for k, v in loaded.signatures["regress"](
        inputs=tf.constant(examples)).items()}
    out["raw"] = {k: v.numpy().tolist() for k, v in loaded.signatures["raw:serving_default"](
        x=tf.constant(x), city=tf.constant(city)).items()}
    model = saved_model_pb2.SavedModel()
    with open(directory + "/saved_model.pb", "rb") as f:
        model.ParseFromString(f.read())
    signatures = model.meta_graphs[0].signature_def
    out["methods"] = {k: s.method_name for k, s in signatures.items()}
    out["classify_inputs"] = sorted(signatures["classify"].inputs)
    print(json.dumps(out, default=lambda b: b.decode()))
    """
)


def test_export_with_serving_input_fn_gives_estimators_signatures(run, program, tmp_path):
    from hookrun.runner.trained.export import export

    result = export(run, tmp_path / "model")
    assert set(result.signatures) == {"serving_default", "classify", "regress", "raw:serving_default"}
    # as Estimator: Classify/Regress take one string input; on the raw alternative they are left out, said why
    assert set(result.excluded) == {"raw:classify", "raw:regress"}
    assert "single tensor input of type tf.string" in result.excluded["raw:classify"]

    features, _ = program.rows(5, 4)
    probabilities = softmax(program.numpy_model(weights(run), features))
    cities = [c.decode() for c in features["city"]]
    script = tmp_path / "load.py"
    script.write_text(LOAD_AND_CALL, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "model"), json.dumps(features["x"].tolist()), json.dumps(cities)],
        capture_output=True, text=True, check=True, env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["methods"] == {
        "serving_default": "tensorflow/serving/predict",
        "classify": "tensorflow/serving/classify",
        "regress": "tensorflow/serving/regress",
        "raw:serving_default": "tensorflow/serving/predict",
    }
    assert out["classify_inputs"] == ["inputs"]
    np.testing.assert_allclose(out["serving_default"]["probabilities"], probabilities, rtol=1e-5)
    np.testing.assert_allclose(out["raw"]["probabilities"], probabilities, rtol=1e-5)
    np.testing.assert_allclose(out["classify"]["scores"], probabilities, rtol=1e-5)
    assert [row[0] for row in out["classify"]["classes"]] == [["no", "yes"][i] for i in probabilities.argmax(1)]
    np.testing.assert_allclose(out["regress"]["outputs"], probabilities[:, 1], rtol=1e-5)


@pytest.mark.parametrize(
    ("command", "function", "says"),
    [
        ("evaluate", "raising_input_fn", "raised FileNotFoundError: no such file: /data/eval-*.tfrecord"),
        ("evaluate", "wrong_type_input_fn", "returned builtins.list"),
        ("evaluate", "empty_input_fn", "returned an empty dataset"),
        ("evaluate", "renamed_input_fn", "reads features['x']"),
        ("predict", "raising_input_fn", "raised FileNotFoundError"),
        ("predict", "wrong_type_input_fn", "returned features of type list"),
        ("predict", "empty_input_fn", "returned an empty dataset"),
        ("predict", "renamed_input_fn", "reads features['x']"),
        ("export", "raising_serving_input_fn", "raised RuntimeError: vocabulary file missing"),
        ("export", "wrong_type_serving_input_fn", "returned builtins.dict; return a ServingInputReceiver"),
        ("export", "renamed_serving_input_fn", "reads features['city']"),
        ("export", "invalid_receiver_serving_input_fn", "raised ValueError: feature x must be a Tensor"),
    ],
)
def test_hostile_functions_get_one_line_errors_naming_them(run, trained, tmp_path, command, function, says):
    module = trained[1]
    option = "--serving-input-fn" if command == "export" else "--input-fn"
    args = [command, str(run), option, f"{module}:{function}"]
    if command != "evaluate":
        args += ["--output", str(tmp_path / ("model" if command == "export" else "p.jsonl"))]
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {option}: {module}:{function} ") and says in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written at --output


def test_a_run_from_input_fn_without_the_functions_says_what_to_give(run, tmp_path):
    refused = cli.invoke(app, ["predict", str(run), "--data", "x.csv", "-o", str(tmp_path / "p.csv")])
    assert refused.exit_code == 2 and "--input-fn module:function" in refused.stderr
    bad_suffix = cli.invoke(app, ["predict", str(run), "--input-fn", "m:f", "-o", str(tmp_path / "p.parquet")])
    assert bad_suffix.exit_code == 2 and "write predictions to a .jsonl file" in bad_suffix.stderr


def test_validate_build_and_inspect_show_each_input_fns_element(tmp_path, write_module, monkeypatch):
    """Every feature's name, dtype and shape (a SparseTensor said so), and the labels', for both functions."""
    module = write_module("input_fn_program", (REPO / "tests" / "input_fn_program.py").read_text())
    config = {
        "name": "elements",
        "graph": {"builder": f"{module}:tagged_model_fn"},
        "data": {"input_fn": f"{module}:tagged_input_fn", "eval_input_fn": f"{module}:eval_input_fn", "seed": 0},
        "hooks": [{"type": "stop_at_step", "last_step": 2}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    done = cli.invoke(app, ["validate", "config.yaml", "--build"])
    assert done.exit_code == 0, done.output
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    start = lines.index(f"data.input_fn {module}:tagged_input_fn gives:")
    assert lines[start + 1:start + 4] == [
        "  features['x']     float32  [8, 2]",
        "  features['tags']  int64    [8, 3]  sparse",
        "  labels            int64    [8]",
    ]
    assert lines[start + 4] == f"data.eval_input_fn {module}:eval_input_fn gives:"
    assert lines[start + 5:start + 8] == [
        "  features['x']     float32  [None, 2]",
        "  features['city']  string   [None]",
        "  labels            int64    [None]",
    ]
    inspected = cli.invoke(app, ["inspect", "config.yaml", "--json"])
    assert inspected.exit_code == 0, inspected.output
    elements = json.loads(inspected.stdout)["input_elements"]
    assert elements[f"data.input_fn {module}:tagged_input_fn"][1] == {
        "name": "features['tags']", "kind": "sparse", "dtype": "int64", "shape": "[8, 3]"
    }


def test_validate_checks_the_serving_input_fn_module_without_tensorflow(tmp_path):
    (tmp_path / "my_model.py").write_text("def serving_input_fn():\n    raise SystemExit('never run by validate')\n")
    base = {"name": "v", "data": {"input_fn": "my_model:serving_input_fn"}}

    def validate(graph: dict) -> str:
        (tmp_path / "config.yaml").write_text(yaml.safe_dump({**base, "graph": graph}), encoding="utf-8")
        code = (
            "import sys\nfrom hookrun.cli.app import app\ntry:\n"
            f"    code = app(['validate', {str(tmp_path / 'config.yaml')!r}], standalone_mode=False)\n"
            "except SystemExit as stop:\n    code = stop.code\n"
            "print('EXIT', code, 'TF' if 'tensorflow' in sys.modules else 'noTF')\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
        return done.stdout + done.stderr

    out = validate({"builder": "my_model:serving_input_fn", "serving_input_fn": "my_model:serving_input_fn"})
    assert "noTF" in out and "EXIT 2" not in out and "never run" not in out, out
    out = validate({"builder": "my_model:serving_input_fn", "serving_input_fn": "no_such_module:fn"})
    assert "EXIT 2 noTF" in out and "graph.serving_input_fn" in out and "no_such_module" in out, out
    out = validate({"builder": "my_model:serving_input_fn", "serving_input_fn": "my_model serving"})
    assert "EXIT 2 noTF" in out and "not an import path" in out, out


def test_export_of_an_input_fn_run_without_a_serving_input_fn_is_refused_naming_both_fixes(run, tmp_path):
    """The input_fn source has no receiver of its own: one line naming both fixes, nothing written."""
    from hookrun.common.errors import SetupError
    from hookrun.runner.trained.export import export

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    config = yaml.safe_load((copy / "config.yaml").read_text(encoding="utf-8"))
    config["graph"].pop("serving_input_fn")
    (copy / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    with pytest.raises(SetupError, match=r"trained from data\.input_fn; export needs your serving_input_fn: set "
                       r"graph\.serving_input_fn: module:function, or give --serving-input-fn module:function"):
        export(copy, tmp_path / "model")
    assert not (tmp_path / "model").exists()

