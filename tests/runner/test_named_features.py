"""Named features: the builder gets a dict column -> tensor, categorical columns as vocabulary ids (issue 16 c)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from rich.console import Console

from hookrun.config_schemas.loader import ConfigError
from tests.conftest import user_module

CSV = "a,city,y\n" + "".join(
    f"{a},{city},{y}\n"
    for a, city, y in [(1, "Oslo", 1), (2, "Rome", 2), (3, "Oslo", 3), (4, "", 4), (5, "Rome", 5), (6, "Lima", 6)]
    * 4
)

BUILDER = """
import tensorflow as tf

from hookrun.runner import layers

SEEN = []


def build(features, labels, params):
    SEEN.append((features, dict(params)))
    if isinstance(features, dict):
        city = params["feature_columns"]["city"]
        net = tf.concat([features["a"], layers.embedding(features["city"], city["num_buckets"], 2, "city")], 1)
    else:
        net = features
    out = layers.dense(net, 1, "out")
    return {"loss": tf.reduce_mean(tf.square(out - labels))}
"""


def _prepare(make_config, write_module, tmp_path, named_by: str, **graph):
    (tmp_path / "data.csv").write_text(CSV, encoding="utf-8")
    module = write_module("named", BUILDER + (f"\nbuild.hookrun_features = {named_by!r}\n" if named_by else ""))
    loaded = make_config(
        graph={"builder": f"{module}:build", **graph},
        data={"shuffle": False, "batch_size": 6, "missing_by_column": {"city": {"constant": "Rome"}}},
    )
    from hookrun.runner.training.prepare import prepare

    return prepare(loaded, tmp_path / "run", Console(quiet=True)), user_module(module).SEEN


@pytest.mark.parametrize("how", ["attribute", "config"])
def test_named_features_are_a_dict_with_ids_from_the_vocabulary(make_config, write_module, tmp_path, how):
    prepared, seen = _prepare(
        make_config, write_module, tmp_path, "named" if how == "attribute" else "", **(
            {"features": "named"} if how == "config" else {}
        )
    )
    features, params = seen[0]
    assert sorted(features) == ["a", "city", "city/raw"]
    assert params["feature_columns"] == {
        "a": {"kind": "numeric", "mean": 3.5, "std": pytest.approx(1.707825127659933)},
        "city": {"kind": "categorical", "num_buckets": 4, "vocabulary": ["Lima", "Oslo", "Rome"]},
    }
    assert features["city"].dtype == tf.int64 and features["a"].dtype == tf.float32
    assert features["city/raw"].dtype == tf.string
    with prepared.built.graph.as_default(), tf.compat.v1.Session() as session:
        session.run([tf.compat.v1.global_variables_initializer(), tf.compat.v1.tables_initializer()])
        session.run(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS))
        values = session.run(features)
    assert values["city"][:, 0].tolist() == [1, 2, 1, 2, 2, 0]  # the empty cell filled with "Rome"
    assert values["city/raw"][:, 0].tolist() == [b"Oslo", b"Rome", b"Oslo", b"", b"Rome", b"Lima"]
    a = np.array([1, 2, 3, 4, 5, 6] * 4, float)
    np.testing.assert_allclose(values["a"][:, 0], (a[:6] - a.mean()) / a.std(), rtol=1e-5)
    with prepared.built.graph.as_default():
        assert [v.op.name for v in tf.compat.v1.trainable_variables()] == ["city/embeddings", "out/kernel", "out/bias"]


def test_the_dense_matrix_stays_the_default(make_config, write_module, tmp_path):
    _prepared, seen = _prepare(make_config, write_module, tmp_path, "")
    features, params = seen[0]
    assert not isinstance(features, dict) and features.shape.as_list() == [None, 4]  # a + 3 one-hot
    assert "feature_columns" not in params


def test_a_wrong_declaration_is_a_config_error(make_config, write_module, tmp_path):
    with pytest.raises(ConfigError, match="hookrun_features is 'dict'"):
        _prepare(make_config, write_module, tmp_path, "dict")


def test_named_features_train_and_evaluate(make_config, write_module, run_train, tmp_path):
    (tmp_path / "data.csv").write_text(CSV, encoding="utf-8")
    module = write_module("named", BUILDER + "\nbuild.hookrun_features = 'named'\n")
    loaded = make_config(
        graph={"builder": f"{module}:build"},
        data={"validation_split": 0.25, "epochs": 2, "missing_by_column": {"city": {"constant": "Rome"}}},
        hooks=[{"type": "evaluation", "every_n_steps": 2}],
    )
    result = run_train(loaded)
    assert result.final_global_step > 0 and result.evaluations and np.isfinite(result.evaluations[-1]["val_loss"])


MODEL_FN = """
import tensorflow as tf

from hookrun.runner import layers

SEEN = []


def model_fn(features, labels, mode, params):
    SEEN.append((features, labels))
    net = tf.concat([features["a"], tf.cast(features["city"], tf.float32)], 1)
    logits = layers.dense(net, 3, 'out')
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels[:, 0], logits)
    return {"loss": loss}
"""

CLASSES = "a,city,kind\n" + "".join(
    f"{a},{city},{kind}\n" for a, city, kind in [(1, "Oslo", "x"), (2, "Rome", "y"), (3, "Lima", "z")] * 4
)


def test_a_model_fn_gets_named_features_and_int_class_ids_by_default(make_config, write_module, run_train, tmp_path):
    """The Estimator form indexes features["a"] without declaring hookrun_features; class ids arrive as int64."""
    (tmp_path / "data.csv").write_text(CLASSES, encoding="utf-8")
    module = write_module("classes", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn"},
        data={"label": "kind", "epochs": 2, "batch_size": 4, "validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 2}],
    )
    result = run_train(loaded)
    features, labels = user_module(module).SEEN[0]
    assert sorted(features) == ["a", "city", "city/raw"]
    assert labels.dtype == tf.int64 and labels.shape.as_list() == [None, 1]
    assert result.final_global_step > 0 and np.isfinite(result.evaluations[-1]["val_loss"])


def test_a_model_fn_gets_a_numeric_label_as_float32_and_can_declare_dense(make_config, write_module, tmp_path):
    (tmp_path / "data.csv").write_text(CSV, encoding="utf-8")
    source = """
import tensorflow as tf

from hookrun.runner import layers

SEEN = []


def model_fn(features, labels, mode, params):
    SEEN.append((features, labels))
    net = features if not isinstance(features, dict) else tf.concat([features["a"]], 1)
    out = layers.dense(net, 1, 'out')
    return {"loss": tf.reduce_mean(tf.square(out - labels))}
"""
    loaded_args = {"data": {"shuffle": False, "batch_size": 6, "missing_by_column": {"city": {"constant": "Rome"}}}}
    from hookrun.runner.training.prepare import prepare

    module = write_module("numeric_label", source)
    prepare(make_config(graph={"builder": f"{module}:model_fn"}, **loaded_args), tmp_path / "r1", Console(quiet=True))
    features, labels = user_module(module).SEEN[0]
    assert isinstance(features, dict) and labels.dtype == tf.float32
    dense = write_module("dense_model_fn", source + "\nmodel_fn.hookrun_features = 'dense'\n")
    prepare(make_config(graph={"builder": f"{dense}:model_fn"}, **loaded_args), tmp_path / "r2", Console(quiet=True))
    features, labels = user_module(dense).SEEN[0]
    assert not isinstance(features, dict) and features.shape.as_list() == [None, 4]
