"""The public ``hookrun.runner.layers`` (``hookrun.runner.graph.layers``): dense, embedding, dropout (issue 16 a)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from hookrun.runner import layers

v1 = tf.compat.v1


def _model(features, ids, mode):
    net = tf.concat([features, layers.embedding(ids, num_buckets=5, dimension=3, name="city")], axis=1)
    net = layers.dense(net, 4, "hidden", activation="relu")
    net = layers.dropout(net, 0.5, mode)
    return layers.dense(net, 1, "output")


def test_train_and_eval_calls_share_every_weight_and_the_saver_holds_them(tmp_path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(1)
        features = v1.placeholder(tf.float32, [None, 2])
        ids = v1.placeholder(tf.int64, [None, 1])
        train_out = _model(features, ids, "train")
        names = sorted(v.op.name for v in v1.trainable_variables())
        with v1.variable_scope(v1.get_variable_scope(), reuse=True):
            eval_out = _model(features, ids, "eval")
        assert sorted(v.op.name for v in v1.trainable_variables()) == names
        assert names == ["city/embeddings", "hidden/bias", "hidden/kernel", "output/bias", "output/kernel"]
        assert sorted(v.op.name for v in v1.global_variables()) == names
        saver = v1.train.Saver()
        feed = {features: np.ones((6, 2), np.float32), ids: np.array([[0], [1], [2], [3], [4], [0]])}
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            first, again = session.run([eval_out, eval_out], feed)
            np.testing.assert_array_equal(first, again)  # no dropout in eval
            train_values = [session.run(train_out, feed) for _ in range(3)]
            assert any(not np.allclose(t, first) for t in train_values)  # dropout in train
            path = saver.save(session, str(tmp_path / "model.ckpt"))
            weights = {v.op.name: session.run(v) for v in v1.trainable_variables()}
    stored = dict(tf.train.list_variables(path))
    assert stored["city/embeddings"] == [5, 3]
    assert stored["hidden/kernel"] == [5, 4]
    assert np.allclose(tf.train.load_checkpoint(path).get_tensor("output/kernel"), weights["output/kernel"])


def test_eval_call_with_another_name_fails_instead_of_making_new_weights() -> None:
    with tf.Graph().as_default():
        layers.dense(v1.placeholder(tf.float32, [None, 2]), 3, "a")
        with v1.variable_scope(v1.get_variable_scope(), reuse=True), pytest.raises(ValueError, match="b/kernel"):
            layers.dense(v1.placeholder(tf.float32, [None, 2]), 3, "b")


def test_dropout_rate_zero_and_non_train_modes_pass_inputs_through() -> None:
    with tf.Graph().as_default():
        x = tf.ones([4, 4])
        assert layers.dropout(x, 0.3, "eval") is x
        assert layers.dropout(x, 0.3, "infer") is x
        assert layers.dropout(x, 0.0, "train") is x
        assert layers.dropout(x, 0.3, "train") is not x


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x, i: layers.dense(x, 0, "d"), "units must be >= 1"),
        (lambda x, i: layers.dense(x, 2, "d", activation="swish"), "activation 'swish'"),
        (lambda x, i: layers.dense(tf.ones([2, 2, 2]), 2, "d"), r"\[batch, n_in\]"),
        (lambda x, i: layers.embedding(i, 0, 2, "e"), "num_buckets and dimension"),
        (lambda x, i: layers.embedding(tf.ones([2, 2], tf.int64), 3, 2, "e"), r"\[batch\] or \[batch, 1\]"),
        (lambda x, i: layers.dropout(x, 1.0, "train"), r"rate must be in \[0, 1\)"),
    ],
)
def test_bad_arguments_are_clear_value_errors(call, message) -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            call(tf.ones([2, 2]), tf.zeros([2], tf.int64))


def test_embedding_looks_up_the_row_of_each_id() -> None:
    with tf.Graph().as_default():
        ids = tf.constant([2, 0, 2], tf.int64)
        out = layers.embedding(ids, 3, 2, "e")
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            table, rows = session.run([v1.global_variables()[0], out])
    np.testing.assert_array_equal(rows, table[[2, 0, 2]])


def test_importing_layers_does_not_import_tensorflow() -> None:
    import subprocess
    import sys

    code = "import sys; from hookrun.runner import layers, EstimatorSpec; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
