"""The model after training: ``hookrun predict`` and ``hookrun export`` (issue 15 c, d).

Real TensorFlow, real files; each run trains a few steps only.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.runner.config import load_config
from tests.conftest import CONFIGS, base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "200"})

CALIFORNIA = CONFIGS / "data" / "california_housing.csv"
STEPS = [{"type": "stop_at_step", "num_steps": 4}, {"type": "checkpoint_saver", "save_steps": 4}]


def _train(tmp_path, config, name="run"):
    """Write ``config`` (a dict) to ``tmp_path/<name>.yaml``, train it into ``tmp_path/<name>``; the run directory."""
    from hookrun.runner.trainer import train

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = train(load_config(path), run_dir=tmp_path / name)
    assert result.final_global_step == 4
    return tmp_path / name


def _california(tmp_path, graph, label="median_house_value", **data):
    """The California config (absolute data path) with ``graph``, 4 steps of 256 rows."""
    config = {
        "name": "t",
        "graph": graph,
        "data": {
            "train": str(CALIFORNIA),
            "label": label,
            "missing_by_column": {"total_bedrooms": "median"},
            "batch_size": 256,
            "seed": 0,
            **({"label_scale": 100000} if label == "median_house_value" else {}),
            **data,
        },
        "hooks": STEPS,
    }
    return _train(tmp_path, config)


def _sample_rows(path, out):
    """The header, the first 5 rows, rows with an empty ``total_bedrooms`` and one row of each ``ocean_proximity``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    bedrooms, ocean = header.index("total_bedrooms"), header.index("ocean_proximity")
    chosen = list(lines[1:6])
    missing = [line for line in lines[1:] if line.split(",")[bedrooms] == ""][:4]
    seen: dict[str, str] = {}
    for line in lines[1:]:
        seen.setdefault(line.split(",")[ocean], line)
    chosen += missing + list(seen.values())
    assert len(missing) == 4 and len(seen) == 5
    out.write_text("\n".join([lines[0], *chosen]) + "\n", encoding="utf-8")
    return out


def _read_csv(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _relative(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


#: Loads a SavedModel in a process that imports only TensorFlow (and the standard library), feeds it the
#: rows of each CSV file given as they are (NaN for an empty number, the text as is), twice, and prints the
#: outputs, one JSON line per file.
SERVE = """
import csv, json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf

model = tf.saved_model.load(sys.argv[1])
serve = model.signatures["serving_default"]
for rows_csv in sys.argv[2:]:
  rows = list(csv.DictReader(open(rows_csv, newline="")))
  columns = {}
  for name, spec in serve.structured_input_signature[1].items():
      if spec.dtype == tf.string:
          columns[name] = tf.constant([row[name] for row in rows])
      else:
          columns[name] = tf.constant([float(row[name]) if row[name] else float("nan") for row in rows], tf.float32)

  def plain(outputs):
      return {k: [x.decode() if isinstance(x, bytes) else x for x in v.numpy().tolist()] for k, v in outputs.items()}

  first, second = plain(serve(**columns)), plain(serve(**columns))
  examples = []
  for row in rows:
      feature = {}
      for name, spec in serve.structured_input_signature[1].items():
          if spec.dtype == tf.string:
              feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[row[name].encode()]))
          elif row[name]:  # an empty number: the feature is absent (missing)
              feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(row[name])]))
      examples.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
  parsed = plain(model.signatures["examples"](examples=tf.constant(examples)))
  loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("hookrun", "runner", "hooks", "cli"))
  print(json.dumps({"first": first, "second": second, "examples": parsed, "hookrun_modules": loaded}))
"""


def _serve(saved_model, *rows_csvs):
    """The outputs of the SavedModel on each CSV's rows, from one fresh process that imports only TensorFlow:
    one dict for one file, a list of them (in order) for several."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "PYTHONPATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SERVE), str(saved_model), *map(str, rows_csvs)],
        capture_output=True, text=True, env=env, timeout=300, cwd=str(saved_model.parent),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = [json.loads(line) for line in done.stdout.strip().splitlines()[-len(rows_csvs):]]
    assert len(outputs) == len(rows_csvs), done.stdout[-3000:]
    return outputs[0] if len(rows_csvs) == 1 else outputs


def test_exported_model_in_a_fresh_process_equals_predict_on_raw_california_rows(tmp_path, monkeypatch):
    run = _california(tmp_path, {"builder": "dnn_regressor", "params": {"hidden_units": [16, 8], "dropout": 0.5}})
    rows = _sample_rows(CALIFORNIA, tmp_path / "rows.csv")
    monkeypatch.chdir(tmp_path)
    predicted = cli.invoke(app, ["predict", str(run), "--data", "rows.csv", "--output", "preds.csv"])
    assert predicted.exit_code == 0, predicted.output
    exported = cli.invoke(app, ["export", str(run), "--output", "model", "--json"])
    assert exported.exit_code == 0, exported.output
    signatures = json.loads(exported.stdout)["signatures"]
    assert signatures["serving_default"]["inputs"]["ocean_proximity"] == "string"
    assert signatures["serving_default"]["inputs"]["total_bedrooms"] == "float32"
    assert signatures["examples"] == {"inputs": {"examples": "string"}, "outputs": {"predictions": "float32"}}

    served, served_all = _serve(tmp_path / "model", rows, CALIFORNIA)  # one fresh process serves both files
    assert served["hookrun_modules"] == []
    assert served["first"] == served["second"]  # deterministic: no dropout in the exported graph
    table = _read_csv(tmp_path / "preds.csv")
    assert [row["row"] for row in table] == [str(i) for i in range(len(table))] and len(table) == 14
    assert list(table[0]) == ["row", "median_house_value"]
    values = served["first"]["predictions"]
    assert len(values) == len(table)
    for mine, theirs, parsed in zip(table, values, served["examples"]["predictions"], strict=True):
        expected = float(mine["median_house_value"])
        assert math.isfinite(expected) and 1_000 < abs(expected) < 5e6  # dollars, a missing total_bedrooms filled
        assert _relative(expected, theirs) <= 1e-5, (expected, theirs)
        assert parsed == theirs  # the tf.train.Example signature: the same graph

    again = cli.invoke(app, ["predict", str(run), "--data", "rows.csv", "--output", "preds.csv", "--overwrite"])
    assert again.exit_code == 0, again.output
    assert _read_csv(tmp_path / "preds.csv") == table  # predict is deterministic too

    every = cli.invoke(app, ["predict", str(run), "--data", str(CALIFORNIA), "--output", "all.csv"])  # 20,640 rows
    assert every.exit_code == 0, every.output
    mine = np.array([float(row["median_house_value"]) for row in _read_csv(tmp_path / "all.csv")])
    theirs = np.array(served_all["first"]["predictions"])
    assert mine.shape == theirs.shape == (20_640,)
    np.testing.assert_allclose(mine, theirs, rtol=1e-5)


def _classes_csv(path, rows=64, seed=0):
    """``a, b, kind, y``: a text feature and a text label ``lo``/``hi`` (``y`` from ``a + b``)."""
    rng = np.random.default_rng(seed)
    lines = ["a,b,kind,y"]
    for i in range(rows):
        a, b = rng.normal(size=2)
        lines.append(f"{a:.5f},{b:.5f},{['red', 'green', 'blue'][i % 3]},{'hi' if a + b > 0 else 'lo'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _load(saved_model):
    import tensorflow as tf

    return tf.saved_model.load(str(saved_model))


def _columns_of(table, spec):
    import tensorflow as tf

    out = {}
    for name, tensor_spec in spec.items():
        if tensor_spec.dtype == tf.string:
            out[name] = tf.constant([row[name] for row in table])
        else:
            out[name] = tf.constant([float(row[name]) if row[name] else np.nan for row in table], tf.float32)
    return out


@pytest.mark.parametrize("builder", ["linear_regressor", "dnn_regressor", "linear_classifier", "dnn_classifier"])
def test_every_built_in_builder_exports_and_predicts_alike(tmp_path, builder):
    from hookrun.runner import export, predict

    classifier = builder.endswith("classifier")
    if classifier:
        data_file = _classes_csv(tmp_path / "data.csv")
        graph = {"builder": builder, "params": {"n_classes": 2}}
    else:
        data_file = write_csv(tmp_path / "data.csv", linear_rows(64, seed=3))
        graph = {"builder": builder}
    if builder.startswith("dnn"):
        graph["params"] = {**graph.get("params", {}), "hidden_units": [8], "dropout": 0.5}
    config = base_config(hooks=STEPS, graph=graph, data={"train": str(data_file)})
    run = _train(tmp_path, config)
    result = predict(run, [str(data_file)], tmp_path / "preds.csv")
    table = _read_csv(tmp_path / "preds.csv")
    assert result.rows == 64 == len(table)
    exported = export(run, tmp_path / "model")
    model = _load(tmp_path / "model")
    serve = model.signatures["serving_default"]
    rows = _read_csv(data_file)
    first = serve(**_columns_of(rows, serve.structured_input_signature[1]))
    second = serve(**_columns_of(rows, serve.structured_input_signature[1]))
    for name in first:
        np.testing.assert_array_equal(first[name].numpy(), second[name].numpy())
    if classifier:
        assert set(exported.signatures["serving_default"]["outputs"]) == {"predictions", "probabilities", "classes"}
        assert exported.signatures["serving_default"]["inputs"] == {"a": "float32", "b": "float32", "kind": "string"}
        assert list(table[0]) == ["row", "y", "probability_hi", "probability_lo"]
        classes = [c.decode() for c in first["classes"].numpy()]
        assert [row["y"] for row in table] == classes and set(classes) <= {"hi", "lo"}  # text, as the label
        probabilities = first["probabilities"].numpy()
        np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
        mine = np.array([[float(row["probability_hi"]), float(row["probability_lo"])] for row in table])
        np.testing.assert_allclose(mine, probabilities, rtol=1e-5, atol=1e-7)
        assert list(first["predictions"].numpy()) == [["hi", "lo"].index(c) for c in classes]
    else:
        assert set(exported.signatures["serving_default"]["outputs"]) == {"predictions"}
        mine = np.array([float(row["y"]) for row in table])
        np.testing.assert_allclose(mine, first["predictions"].numpy(), rtol=1e-5)
        labels = np.array([float(row["y"]) for row in rows])
        assert not np.allclose(mine, labels)  # predictions, not the label column copied


CUSTOM_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1])
    b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
    out = tf.matmul(features, w) + b
    if params["mode"] == "train":  # training-only noise: infer mode must not have it
        out = out + tf.random.normal(tf.shape(out))
    return {"loss": tf.reduce_mean(tf.square(out - labels)), "predictions": 10.0 * out}
"""


def test_a_custom_builder_exports_and_predicts_in_infer_mode(tmp_path, write_module):
    from hookrun.runner import export, predict

    module = write_module("custom_builder", CUSTOM_BUILDER)
    data_file = write_csv(tmp_path / "data.csv", linear_rows(32, seed=4))
    run = _train(tmp_path, base_config(hooks=STEPS, graph={"builder": f"{module}:build"}, data={"train": "data.csv"}))
    predict(run, [str(data_file)], tmp_path / "preds.csv")
    export(run, tmp_path / "model")
    serve = _load(tmp_path / "model").signatures["serving_default"]
    rows = _read_csv(data_file)
    got = serve(**_columns_of(rows, serve.structured_input_signature[1]))["predictions"].numpy()
    mine = np.array([float(row["y"]) for row in _read_csv(tmp_path / "preds.csv")])
    np.testing.assert_allclose(mine, got, rtol=1e-5)
    import tensorflow as tf  # the weights times 10: what the builder returns in infer mode, no noise

    w = tf.train.load_variable(str(run / "model.ckpt-4"), "w")
    b = tf.train.load_variable(str(run / "model.ckpt-4"), "b")
    state = json.loads((run / "preprocessing.json").read_text())
    x = np.array([[(float(row[c["name"]]) - c["mean"]) / c["std"] for c in state["columns"]] for row in rows])
    np.testing.assert_allclose(mine, 10.0 * (x @ w[:, 0] + b), rtol=1e-4)


MODEL_FN = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec, ModeKeys, layers


class CountBatches(tf.compat.v1.train.SessionRunHook):
    def __init__(self, path):
        self.path, self.count = path, 0

    def before_run(self, run_context):
        self.count += 1

    def end(self, session):
        open(self.path, "w").write(str(self.count))


def model_fn(features, labels, mode, params):
    out = layers.dense(features, 1, "out")
    scores = {"value": tf.identity(out * 2.0), "double": tf.concat([out, out], axis=1)}
    if mode == ModeKeys.PREDICT:
        assert labels is None
        return EstimatorSpec(
            mode=mode,
            predictions={"value": out[:, 0], "twice": scores["double"]},
            export_outputs={"scores": scores},
            prediction_hooks=[CountBatches(params["count_file"])],
        )
    return EstimatorSpec(mode=mode, loss=tf.reduce_mean(tf.square(out - labels)))
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_a_model_fn_exports_its_export_outputs_and_runs_its_prediction_hooks(tmp_path, write_module):
    from hookrun.runner import export, predict

    module = write_module("model_fn_builder", MODEL_FN)
    data_file = write_csv(tmp_path / "data.csv", linear_rows(32, seed=5))
    count_file = tmp_path / "count.txt"
    graph = {"builder": f"{module}:model_fn", "params": {"count_file": str(count_file)}}
    run = _train(tmp_path, base_config(hooks=STEPS, graph=graph, data={"train": "data.csv"}))
    result = predict(run, [str(data_file)], tmp_path / "preds.csv")
    assert result.columns == ["row", "y", "twice_0", "twice_1"]  # `value` (the first entry) is the predictions
    assert count_file.read_text() == "1"  # one batch of 32 rows: the prediction hook ran
    exported = export(run, tmp_path / "model")
    assert set(exported.signatures) == {"serving_default", "examples", "scores"}
    assert set(exported.signatures["scores"]["outputs"]) == {"value", "double"}
    model = _load(tmp_path / "model")
    rows = _read_csv(data_file)
    columns = _columns_of(rows, model.signatures["serving_default"].structured_input_signature[1])
    default = model.signatures["serving_default"](**columns)
    scores = model.signatures["scores"](**columns)
    table = _read_csv(tmp_path / "preds.csv")
    np.testing.assert_allclose([float(r["y"]) for r in table], default["predictions"].numpy(), rtol=1e-5)
    np.testing.assert_allclose(scores["value"].numpy()[:, 0], 2 * default["predictions"].numpy(), rtol=1e-5)
    np.testing.assert_allclose(default["twice"].numpy()[:, 1], default["predictions"].numpy(), rtol=1e-5)


def test_the_wide_and_deep_model_fn_example_exports_with_named_features(tmp_path):
    from hookrun.runner import export, predict

    config = yaml.safe_load((CONFIGS / "california_wide_deep_model_fn.yaml").read_text())
    config["data"]["train"] = str(CALIFORNIA)
    config["data"]["batch_size"] = 256
    config["hooks"] = STEPS
    sys.path.insert(0, str(CONFIGS))  # the model_fn sits beside the original config
    try:
        run = _train(tmp_path, config)
        rows = _sample_rows(CALIFORNIA, tmp_path / "rows.csv")
        predict(run, [str(rows)], tmp_path / "preds.csv")
        export(run, tmp_path / "model")
    finally:
        sys.path.remove(str(CONFIGS))
    served = _serve(tmp_path / "model", rows)
    assert served["first"] == served["second"]
    table = _read_csv(tmp_path / "preds.csv")
    for mine, theirs in zip(table, served["first"]["predictions"], strict=True):
        assert _relative(float(mine["median_house_value"]), theirs) <= 1e-5


def test_the_ocean_classifier_writes_text_classes(tmp_path):
    from hookrun.runner import predict

    run = _california(
        tmp_path, {"builder": "linear_classifier", "params": {"n_classes": 5}}, label="ocean_proximity"
    )
    rows = _sample_rows(CALIFORNIA, tmp_path / "rows.csv")
    result = predict(run, [str(rows)], tmp_path / "preds.csv")
    vocabulary = ["<1H OCEAN", "INLAND", "ISLAND", "NEAR BAY", "NEAR OCEAN"]
    assert result.columns == ["row", "ocean_proximity", *(f"probability_{c}" for c in vocabulary)]
    for row in _read_csv(tmp_path / "preds.csv"):
        probabilities = [float(row[f"probability_{c}"]) for c in vocabulary]
        assert row["ocean_proximity"] == vocabulary[int(np.argmax(probabilities))]
        assert abs(sum(probabilities) - 1) < 1e-5


def _outputs(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("out", ".out")))


def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, monkeypatch):
    data_file = write_csv(tmp_path / "data.csv", linear_rows(32, seed=6))
    run = _train(tmp_path, base_config(hooks=STEPS, data={"train": "data.csv"}))
    monkeypatch.chdir(tmp_path)
    no_b = tmp_path / "no_b.csv"
    no_b.write_text("a,y\n1,2\n")
    later = tmp_path / "later"  # the second file of a glob lacks the column
    later.mkdir()
    write_csv(later / "1.csv", linear_rows(4))
    (later / "2.csv").write_text("a,c,y\n1,2,3\n")
    empty_run = tmp_path / "empty_run"
    empty_run.mkdir()
    for name in ("config.yaml", "preprocessing.json"):
        (empty_run / name).write_bytes((run / name).read_bytes())
    (tmp_path / "out_exists.csv").write_text("keep me")
    (tmp_path / "out_model").mkdir()
    (tmp_path / "out_model" / "keep").write_text("keep me")
    data = ["--data", str(data_file)]
    cases = [
        (["predict", str(empty_run), *data, "--output", "out.csv"], "no checkpoint"),
        (["export", str(empty_run), "--output", "out"], "no checkpoint"),
        (["predict", str(run), "--data", str(no_b), "--output", "out.csv"], "no_b.csv:1: no column 'b'"),
        (["predict", str(run), "--data", "later/*.csv", "--output", "out.csv"], "2.csv:1: no column 'b'"),
        (["predict", str(run), *data, "--output", "out.csv", "--checkpoint", str(run / "model.ckpt-99")],
         "no such checkpoint"),
        (["export", str(run), "--output", "out", "--checkpoint", "nowhere"], "no such checkpoint"),
        (["predict", str(run), *data, "--output", "out_exists.csv"], "already exists; pass --overwrite"),
        (["export", str(run), "--output", "out_model"], "already exists; pass --overwrite"),
        (["export", str(run), "--output", "out_exists.csv", "--overwrite"], "is a file"),
        (["predict", str(run), *data, "--output", "out_model", "--overwrite"], "is a directory"),
        (["predict", str(run), *data, "--output", "out_exists.csv/out.csv"], "out_exists.csv is not a directory"),
        (["predict", str(run), *data, "--output", str(data_file), "--overwrite"], "which this command reads"),
        (["export", str(run), "--output", str(run), "--overwrite"], "which this command reads"),
        (["export", str(run), "--output", str(tmp_path), "--overwrite"], "which this command reads"),
    ]
    for args, words in cases:
        result = cli.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and words in lines[0], (args, result.stderr)
        assert "Traceback" not in result.output
    assert _outputs(tmp_path) == ["out_exists.csv", "out_model"]
    assert (tmp_path / "data.csv").read_text().startswith("a,b,y\n") and (run / "model.ckpt-4.index").is_file()
    assert (tmp_path / "out_exists.csv").read_text() == "keep me"
    assert [p.name for p in (tmp_path / "out_model").iterdir()] == ["keep"]


def test_a_missing_value_the_model_never_saw_is_refused_by_predict_and_nan_in_the_export(tmp_path, monkeypatch):
    """``total_bedrooms: drop``: training left such rows out; predict names the row, the export returns NaN."""
    import tensorflow as tf

    run = _california(tmp_path, {"builder": "linear_regressor"}, missing_by_column={"total_bedrooms": "drop"})
    rows = _sample_rows(CALIFORNIA, tmp_path / "rows.csv")
    monkeypatch.chdir(tmp_path)
    result = cli.invoke(app, ["predict", str(run), "--data", "rows.csv", "--output", "out.csv"])
    assert result.exit_code == 2, result.output
    assert "rows.csv:7: column 'total_bedrooms' (column 5) is empty" in result.stderr
    assert "policy for it is `drop`" in result.stderr
    assert not list(tmp_path.glob("*out.csv*"))
    exported = cli.invoke(app, ["export", str(run), "--output", "model"])
    assert exported.exit_code == 0, exported.output
    serve = _load(tmp_path / "model").signatures["serving_default"]
    table = _read_csv(rows)
    got = serve(**_columns_of(table, serve.structured_input_signature[1]))["predictions"].numpy()
    empty = np.array([row["total_bedrooms"] == "" for row in table])
    assert np.isnan(got[empty]).all() and np.isfinite(got[~empty]).all()
    assert tf.saved_model.contains_saved_model(str(tmp_path / "model"))


def test_overwrite_replaces_an_export_whole(tmp_path):
    from hookrun.runner import export

    data_file = write_csv(tmp_path / "data.csv", linear_rows(32, seed=7))
    run = _train(tmp_path, base_config(hooks=STEPS, data={"train": str(data_file)}))
    export(run, tmp_path / "models" / "model" / "1")  # missing directories are made (TensorFlow Serving's layout)
    assert (tmp_path / "models" / "model" / "1" / "saved_model.pb").is_file()
    export(run, tmp_path / "model")
    (tmp_path / "model" / "stale.txt").write_text("from before")
    export(run, tmp_path / "model", overwrite=True)
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["saved_model.pb", "variables"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)  # --overwrite replaces the link, never writes through it
    export(run, tmp_path / "link", overwrite=True)
    assert not (tmp_path / "link").is_symlink() and (tmp_path / "link" / "saved_model.pb").is_file()
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


WRONG_INFER = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec, layers


def model_fn(features, labels, mode, params):
    out = layers.dense(features, 1, "out")
    if mode != "infer":
        return EstimatorSpec(mode=mode, loss=tf.reduce_mean(tf.square(out - labels)), export_outputs={"x": 3})
    if params["kind"] == "export_outputs":
        return EstimatorSpec(mode=mode, predictions=out, export_outputs={"x": 3})
    if params["kind"] == "prediction_hooks":
        return EstimatorSpec(mode=mode, predictions=out, prediction_hooks=[object()])
    return EstimatorSpec(mode=mode, loss=tf.reduce_mean(out))  # no predictions
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize(
    "kind, words",
    [
        ("export_outputs", "EstimatorSpec.export_outputs['x'] must be a tensor, a dict"),
        ("prediction_hooks", "EstimatorSpec.prediction_hooks[0] (object) is not a SessionRunHook: it lacks begin"),
        ("no_predictions", "returns no `predictions` in infer mode"),
    ],
)
def test_a_wrong_infer_spec_is_one_line_exit_2_naming_the_field(tmp_path, write_module, monkeypatch, kind, words):
    module = write_module("wrong_infer", WRONG_INFER)
    write_csv(tmp_path / "data.csv", linear_rows(32, seed=8))
    graph = {"builder": f"{module}:model_fn", "params": {"kind": kind}}
    run = _train(tmp_path, base_config(hooks=STEPS, graph=graph, data={"train": "data.csv"}))  # trains: ignored there
    monkeypatch.chdir(tmp_path)
    for args in (["predict", str(run), "--data", "data.csv", "--output", "out.csv"], ["export", str(run), "-o", "out"]):
        result = cli.invoke(app, args)
        assert result.exit_code == 2, result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and words in lines[0] and "graph.builder" in lines[0], result.stderr
    assert not list(tmp_path.glob("*out*"))


def test_predict_reads_tfrecord_and_files_without_the_label(tmp_path):
    """The same rows as CSV without the label column, and as TFRecord: the same predictions, in order."""
    import tensorflow as tf

    from hookrun.runner import predict

    data = linear_rows(40, seed=9)
    write_csv(tmp_path / "data.csv", data)
    run = _train(tmp_path, base_config(hooks=STEPS, data={"train": "data.csv"}))
    no_label = tmp_path / "no_label.csv"
    no_label.write_text("b,extra,a\n" + "".join(f"{b:.6f},x,{a:.6f}\n" for a, b, _ in data))  # other order
    with tf.io.TFRecordWriter(str(tmp_path / "rows.tfrecord")) as writer:
        for a, b, _ in data:
            feature = {n: tf.train.Feature(float_list=tf.train.FloatList(value=[v])) for n, v in (("a", a), ("b", b))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    outputs = {}
    for name in ("data.csv", "no_label.csv", "rows.tfrecord"):
        result = predict(run, [str(tmp_path / name)], tmp_path / f"{name}.preds.csv")
        assert result.rows == 40
        outputs[name] = np.array([float(row["y"]) for row in _read_csv(tmp_path / f"{name}.preds.csv")])
    np.testing.assert_allclose(outputs["no_label.csv"], outputs["data.csv"], rtol=1e-6)
    # the TFRecord holds the float32 of the full-precision values, the CSV their 6-decimal text: 1e-5 relative, and
    # an absolute floor for a prediction near zero
    np.testing.assert_allclose(outputs["rows.tfrecord"], outputs["data.csv"], rtol=1e-5, atol=1e-6)
    assert np.ptp(outputs["data.csv"]) > 0


VOCAB_MODEL_FN = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec, layers

v1 = tf.compat.v1
fc = v1.feature_column


def model_fn(features, labels, mode, params):
    # a tf.lookup table from a vocabulary file: "gamma" is on line 2
    table = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(
            params["vocab"], tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
            tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER,
        ),
        -1,
    )
    offset = tf.cast(table.lookup(tf.constant("gamma")), tf.float32)
    if not params.get("column", True):
        out = layers.dense(features, 1, "out") + offset
        return EstimatorSpec(mode=mode, loss=tf.reduce_mean(tf.square(out - labels)) if labels is not None else None,
                             predictions=out)
    # a vocabulary-file feature column: "beta" (line 1) one-hot, weighted 0, 20, 0
    rows = tf.shape(features)[0]
    word = fc.indicator_column(fc.categorical_column_with_vocabulary_file("word", params["vocab"]))
    one_hot = fc.input_layer({"word": tf.fill([rows, 1], "beta")}, [word])
    out = layers.dense(features, 1, "out") + offset + tf.matmul(one_hot, tf.constant([[0.0], [20.0], [0.0]]))
    return EstimatorSpec(mode=mode, loss=tf.reduce_mean(tf.square(out - (labels if labels is not None else out))),
                         predictions=out)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_the_export_carries_its_vocabulary_files_and_loads_elsewhere_after_they_are_gone(tmp_path, write_module):
    """Files in ASSET_FILEPATHS are copied into assets/ and re-pointed, as Estimator's export did."""
    import shutil

    from hookrun.runner import export, predict

    module = write_module("vocab_model_fn", VOCAB_MODEL_FN)
    vocab = tmp_path / "data" / "words.vocab"
    vocab.parent.mkdir()
    vocab.write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    data_file = write_csv(tmp_path / "data.csv", linear_rows(16, seed=6))
    graph = {"builder": f"{module}:model_fn", "params": {"vocab": str(vocab)}}
    run = _train(tmp_path, base_config(hooks=STEPS, graph=graph, data={"train": "data.csv"}))
    predict(run, [str(data_file)], tmp_path / "preds.csv")
    export(run, tmp_path / "model")
    assert (tmp_path / "model" / "assets" / "words.vocab").read_text(encoding="utf-8") == "alpha\nbeta\ngamma\n"
    elsewhere = tmp_path / "elsewhere" / "model"
    elsewhere.parent.mkdir()
    shutil.move(tmp_path / "model", elsewhere)
    shutil.rmtree(vocab.parent)  # the vocabulary file, as the user gave it, is gone
    serve = _load(elsewhere).signatures["serving_default"]
    rows = _read_csv(data_file)
    got = serve(**_columns_of(rows, serve.structured_input_signature[1]))["predictions"].numpy()
    mine = np.array([float(row["y"]) for row in _read_csv(tmp_path / "preds.csv")])
    np.testing.assert_allclose(got.reshape(-1), mine, rtol=1e-5)
    import tensorflow as tf  # the table's 2 and the column's 20 are in it: both files were read from assets/

    w = tf.train.load_variable(str(run / "model.ckpt-4"), "out/kernel")
    b = tf.train.load_variable(str(run / "model.ckpt-4"), "out/bias")
    state = json.loads((run / "preprocessing.json").read_text())
    x = np.array([[(float(row[c["name"]]) - c["mean"]) / c["std"] for c in state["columns"]] for row in rows])
    np.testing.assert_allclose(mine, x @ w[:, 0] + b[0] + 22.0, rtol=1e-4)


def test_an_asset_file_gone_before_the_export_is_one_line_naming_it(tmp_path, write_module):
    from hookrun.common.errors import SetupError
    from hookrun.runner import export

    module = write_module("vocab_model_fn", VOCAB_MODEL_FN)
    vocab = tmp_path / "words.vocab"
    vocab.write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    write_csv(tmp_path / "data.csv", linear_rows(16, seed=6))
    graph = {"builder": f"{module}:model_fn", "params": {"vocab": str(vocab), "column": False}}
    run = _train(tmp_path, base_config(hooks=STEPS, graph=graph))
    vocab.unlink()
    with pytest.raises(SetupError, match=f"reads the file {vocab}.*ASSET_FILEPATHS.*not a file now"):
        export(run, tmp_path / "model")
    assert not (tmp_path / "model").exists()


ARGMAX_MODEL_FN = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec, ModeKeys, layers


def model_fn(features, labels, mode, params):
    logits = layers.dense(features, 4, "logits")
    predicted = tf.argmax(logits, 1) + params.get("shift", 0)  # class ids, no probabilities
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode=mode, predictions=predicted)
    ids = tf.cast(tf.reshape(labels, [-1]), tf.int64) - params["first_id"]
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=ids, logits=logits)
    return EstimatorSpec(mode=mode, loss=loss, predictions=predicted)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize("categorical", [True, False])
def test_predicted_class_ids_are_never_written_under_the_labels_name(tmp_path, write_module, categorical):
    """Labels '1'..'4' and an argmax model_fn: the ids 0..3 are mapped to the classes, or named class_id."""
    from hookrun.runner import predict

    rng = np.random.default_rng(7)
    x = rng.normal(size=(64, 2))
    grade = 1 + (x[:, 0] > 0) + 2 * (x[:, 1] > 0)  # 1..4
    path = tmp_path / "grades.csv"
    lines = [f"{a:.4f},{b:.4f},{g}\n" for (a, b), g in zip(x, grade, strict=True)]
    path.write_text("a,b,grade\n" + "".join(lines), "utf-8")
    module = write_module("argmax_model_fn", ARGMAX_MODEL_FN)
    data = {"train": "grades.csv", "label": "grade", **({"categorical": ["grade"]} if categorical else {})}
    graph = {"builder": f"{module}:model_fn", "params": {"first_id": 0 if categorical else 1}}
    run = _train(tmp_path, base_config(hooks=STEPS, graph=graph, data=data))
    result = predict(run, [str(path)], tmp_path / "preds.csv")
    rows = _read_csv(tmp_path / "preds.csv")
    ids = [int(row["class_id"]) for row in rows]
    assert set(ids) <= {0, 1, 2, 3}
    if categorical:  # the run knows the classes: '1'..'4', sorted; class id = index
        assert result.columns == ["row", "grade", "class_id"]
        assert [row["grade"] for row in rows] == [["1", "2", "3", "4"][i] for i in ids]
    else:  # a numeric label: the run cannot tell which value an id stands for
        assert result.columns == ["row", "class_id"]


def test_a_predicted_class_id_outside_the_labels_classes_is_one_line(tmp_path, write_module):
    from hookrun.common.errors import SetupError
    from hookrun.runner import predict

    rng = np.random.default_rng(8)
    lines = [f"{a:.4f},{b:.4f},{'xy'[int(a > 0)]}\n" for a, b in rng.normal(size=(32, 2))]
    (tmp_path / "two.csv").write_text("a,b,kind\n" + "".join(lines), "utf-8")
    module = write_module("argmax_model_fn", ARGMAX_MODEL_FN)
    graph = {"builder": f"{module}:model_fn", "params": {"first_id": 0, "shift": 2}}  # ids 2..5 of 2 classes
    run = _train(tmp_path, base_config(hooks=STEPS, graph=graph, data={"train": "two.csv", "label": "kind"}))
    with pytest.raises(SetupError, match=r"predicts a class id outside the label's classes \(ids 0 to 1\)"):
        predict(run, [str(tmp_path / "two.csv")], tmp_path / "preds.csv")
    assert not (tmp_path / "preds.csv").exists()
