"""The shipped model_fn example on California housing trains, evaluates, resumes; its checkpoint restores
into the same model_fn in a plain tf.compat.v1 script (issue 16 d), run in this process (its own graph)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import textwrap

import numpy as np
import pytest

from hookrun.runner.config import load_config
from tests.conftest import CONFIGS

CONFIG = CONFIGS / "california_wide_deep_model_fn.yaml"


def test_the_example_trains_evaluates_resumes_and_restores_in_plain_tf(run_train, tmp_path):
    run = tmp_path / "run"
    hooks = ["hooks[2].every_n_steps=20", "hooks[3].every_n_step=20", "hooks[4].save_steps=20"]
    first = run_train(load_config(CONFIG, ["data.epochs=1", "data.batch_size=256", *hooks]), run_dir=run)
    assert first.end_of_data and first.final_global_step == 65  # ceil(16,478 training rows / 256)
    assert 30_000 < first.evaluations[-1]["val_rmse"] < 150_000  # dollars (eval_metric_ops), one epoch
    assert {"val_loss", "val_rmse", "val_mae"} <= set(first.history_columns)

    second = run_train(load_config(CONFIG, ["data.epochs=2", "data.batch_size=256", *hooks]), run_dir=run)
    assert second.initial_step == 65
    assert second.final_global_step == 129  # ceil(2 epochs x 16,478 rows / 256): the rest, not two more epochs
    assert second.history[0]["step"] == 20 and second.evaluations[-1]["step"] == 129

    from hookrun.runner import evaluate  # `hookrun evaluate` rebuilds the same model_fn with named features

    evaluated = evaluate(run)
    assert evaluated.global_step == 129
    assert evaluated.metrics["val_rmse"] == pytest.approx(second.evaluations[-1]["val_rmse"], rel=1e-4)

    state = json.loads((run / "preprocessing.json").read_text())
    script = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        sys.path.insert(0, {str(CONFIGS)!r})
        from wide_deep_model_fn import model_fn

        state = json.load(open({str(run / "preprocessing.json")!r}))
        v1 = tf.compat.v1
        columns = {{}}
        features = {{}}
        with tf.Graph().as_default():
            for column in state["columns"]:
                if column["kind"] == "numeric":
                    columns[column["name"]] = {{"kind": "numeric"}}
                    features[column["name"]] = v1.placeholder(tf.float32, [None, 1])
                else:
                    vocabulary = column["vocabulary"]
                    columns[column["name"]] = {{"kind": "categorical", "num_buckets": len(vocabulary) + 1,
                                               "vocabulary": vocabulary}}
                    features[column["name"]] = v1.placeholder(tf.int64, [None, 1])
            params = dict(hidden_units=[64, 32], embedding_dimension=3, dropout=0.0, learning_rate=0.003,
                          log_every_n_steps=1000)
            from hookrun.runner.graph.run_config import HookrunValues, RunInfo
            config = RunInfo(hookrun=HookrunValues("infer", 100000.0, columns))
            v1.train.get_or_create_global_step()
            spec = model_fn(features, None, "infer", params, config)
            saver = v1.train.Saver()
            with v1.Session() as session:
                saver.restore(session, tf.train.latest_checkpoint({str(run)!r}))
                feed = {{t: np.zeros([2, 1]) for t in features.values()}}
                out = session.run(spec.predictions["predictions"], feed)
                table = [v for v in v1.global_variables() if v.op.name == "ocean_proximity_embedding/embeddings"]
                kernel = session.run(table[0])
        print(json.dumps({{"predictions": out.ravel().tolist(), "embedding": kernel.tolist()}}))
        """
    )
    # In this process (the script builds its own graph; TensorFlow is already imported): what it prints.
    path, out = list(sys.path), io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(script, "<plain tf>", "exec"), {"__name__": "__main__"})
    finally:
        sys.path[:] = path
    restored = json.loads(out.getvalue().strip().splitlines()[-1])
    import tensorflow as tf

    checkpoint = tf.train.load_checkpoint(str(run / "model.ckpt-129"))
    np.testing.assert_allclose(restored["embedding"], checkpoint.get_tensor("ocean_proximity_embedding/embeddings"))
    assert len(restored["predictions"]) == 2 and all(np.isfinite(restored["predictions"]))
    assert state["columns"][-1]["name"] == "ocean_proximity"
