"""dnn_classifier, dnn_regressor, linear_classifier, linear_regressor given `feature_columns:` in YAML: TF 1.15's
canned model over the columns (variable names, heads, metric keys); without it the dense builders as before."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from hookrun.config_schemas.builders import builtin_eval_metrics
from hookrun.runner.config import load_config
from hookrun.runner.tf_env import import_tensorflow

tf = import_tensorflow()

#: 48 rows: numeric x, text color, numeric y (~ 2x + color's offset) and text label kind (big/small by y).
COLORS = ("red", "green", "blue")


def write_rows(path, num_rows: int = 48) -> None:
    rng = np.random.default_rng(0)
    lines = ["x,color,y,kind"]
    for _ in range(num_rows):
        x = float(rng.normal())
        color = COLORS[int(rng.integers(3))]
        y = 2 * x + COLORS.index(color)
        lines.append(f"{x:.4f},{color},{y:.4f},{'big' if y > 1 else 'small'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def config_file(tmp_path, builder: str, label: str, params: dict) -> object:
    write_rows(tmp_path / "rows.csv")
    config = {
        "name": "single-list",
        "graph": {"builder": builder, "params": params},
        "data": {"train": "rows.csv", "label": label, "batch_size": 8, "epochs": 2, "seed": 0,
                 "validation_split": 0.25},
        "hooks": [{"type": "evaluation", "every_n_steps": 8}, {"type": "checkpoint_saver", "save_steps": 100}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return load_config(path)


DNN_COLUMNS = [{"numeric": "x"}, {"indicator": {"vocabulary_list": "color"}}]
LINEAR_COLUMNS = [{"numeric": "x"}, {"vocabulary_list": "color"}]


def checkpoint_variables(run_dir) -> set[str]:
    return {name for name, _ in tf.train.list_variables(str(run_dir))}


@pytest.mark.parametrize(
    ("builder", "label", "params", "expected"),
    [
        ("dnn_classifier", "kind", {"feature_columns": DNN_COLUMNS, "hidden_units": [4]},
         {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias"}),
        ("linear_regressor", "y", {"feature_columns": LINEAR_COLUMNS},
         {"linear/linear_model/x/weights", "linear/linear_model/color/weights", "linear/linear_model/bias_weights"}),
    ],
)
def test_a_dense_builder_given_feature_columns_trains_tf_1_15s_canned_model(
    run_train, tmp_path, builder, label, params, expected
):
    result = run_train(config_file(tmp_path, builder, label, params))
    variables = checkpoint_variables(result.run_dir)
    assert expected <= variables
    assert not any(name.startswith(("hidden_", "logits/", "linear/kernel")) for name in variables)
    last = result.evaluations[-1]
    checked = load_config(tmp_path / "config.yaml").config.graph.params
    metrics = builtin_eval_metrics(builder, checked)
    assert {f"val_{name}" for name in metrics} <= set(last)
    assert "val_average_loss" in last  # TF 1.15's head's MetricKeys, not the dense builders' rmse/mae


def test_without_feature_columns_the_dense_builder_stays(run_train, tmp_path):
    result = run_train(config_file(tmp_path, "dnn_regressor", "y", {"hidden_units": [4]}))
    assert {"val_rmse", "val_mae"} <= set(result.evaluations[-1])
    assert not any(name.startswith("dnn/") for name in checkpoint_variables(result.run_dir))


def test_a_canned_classifier_on_data_files_exports_and_predicts_the_labels_values(run_train, tmp_path):
    """Estimator's label_vocabulary: `classes` are the label's text (big, small), not the reader's ids as text."""
    import csv

    from hookrun.runner import export, predict
    from tests.test_canned_yaml import run_signature, signatures

    params = {"feature_columns": LINEAR_COLUMNS, "optimizer": {"name": "Ftrl", "learning_rate": 0.5}}
    result = run_train(config_file(tmp_path, "linear_classifier", "kind", params))
    output = tmp_path / "export" / "1"
    export(result.run_dir, output)
    assert signatures(output)["classification"].method_name == "tensorflow/serving/classify"
    examples = []
    for x, color in ((2.0, "blue"), (-2.0, "red")):
        example = tf.train.Example()
        example.features.feature["x"].float_list.value.append(x)
        example.features.feature["color"].bytes_list.value.append(color.encode())
        examples.append(example.SerializeToString())
    classified = run_signature(output, "classification", examples)
    assert classified["classes"].tolist() == [[b"big", b"small"]] * 2
    assert classified["scores"].shape == (2, 2)
    assert classified["scores"][0, 0] > 0.5 > classified["scores"][1, 0]  # y = 2x + offset: x = 2 is big
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(output))
        signature = meta.signature_def["predict"]
        values = {"x": [2.0, -2.0], "color": ["blue", "red"], "y": [0.0, 0.0]}
        feeds = {info.name: values[key] for key, info in signature.inputs.items()}
        predicted = session.run({key: info.name for key, info in signature.outputs.items()}, feeds)
    assert predicted["classes"].reshape(-1).tolist() == [b"big", b"small"]
    assert predicted["all_classes"].tolist() == [[b"big", b"small"]] * 2

    rows = tmp_path / "rows.csv"
    written = tmp_path / "predictions.csv"
    predict(result.run_dir, [str(rows)], written)
    with written.open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 48 and {row["kind"] for row in table} <= {"big", "small"}
    assert {(row["all_classes_0"], row["all_classes_1"]) for row in table} == {("big", "small")}
    truth = [row["kind"] for row in csv.DictReader(rows.open(encoding="utf-8"))]
    assert sum(row["kind"] == kind for row, kind in zip(table, truth, strict=True)) >= 36
