"""``hookrun evaluate``/``predict``/``export`` on a run ``hookrun.estimator.Estimator.train`` made (issue 26).

With importable functions the command line gives what ``Estimator.evaluate``/``predict``/``export_saved_model``
give on the same checkpoint; a run whose model_fn was a lambda is refused in one line naming what to write.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hookrun import estimator as tf_estimator
from hookrun.cli.app import app
from tests.estimator import tiny_model

cli = CliRunner(env={"COLUMNS": "200"})
MODULE = "tests.estimator.tiny_model"


def test_the_cli_evaluates_predicts_and_exports_an_estimator_run_as_the_estimator_does(estimator, tmp_path):
    estimator.train(tiny_model.train_input_fn, steps=6)
    run = estimator.model_dir

    done = cli.invoke(app, ["evaluate", run, "--input-fn", f"{MODULE}:eval_input_fn"])
    assert done.exit_code == 0, done.output
    (written,) = [json.loads(p.read_text()) for p in Path(run).glob("eval-6-*.json")]
    expected = estimator.evaluate(tiny_model.eval_input_fn)  # 4 full batches: weighed or not, the same mean
    assert (written["global_step"], written["rows"]) == (6, 32)
    assert written["metrics"]["val_loss"] == pytest.approx(float(expected["loss"]), rel=1e-6)
    assert written["metrics"]["val_mae"] == pytest.approx(float(expected["mae"]), rel=1e-6)

    output = tmp_path / "predictions.jsonl"
    done = cli.invoke(app, ["predict", run, "--input-fn", f"{MODULE}:predict_input_fn", "--output", str(output)])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in output.read_text().splitlines()]
    singles = list(estimator.predict(tiny_model.predict_input_fn))
    assert len(records) == len(singles) == 10
    np.testing.assert_allclose([r["y"] for r in records], [s["y"] for s in singles], rtol=1e-6)
    np.testing.assert_allclose([r["twice"] for r in records], [s["twice"] for s in singles], rtol=1e-6)

    done = cli.invoke(app, ["export", run, "--output", str(tmp_path / "export"),
                            "--serving-input-fn", f"{MODULE}:serving_input_fn"])
    assert done.exit_code == 0, done.output
    import tensorflow as tf

    x, _ = tiny_model.data(rows=10, seed=2)
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"](x=tf.constant(x))
    np.testing.assert_allclose(served["y"].numpy(), [s["y"] for s in singles], rtol=1e-6)


def lambda_model_fn_estimator(tmp_path):
    config = tf_estimator.RunConfig(save_checkpoints_steps=3, save_summary_steps=None, log_step_count_steps=None)
    return tf_estimator.Estimator(lambda features, labels, mode, params: tiny_model.model_fn(
        features, labels, mode, params), model_dir=str(tmp_path / "lambda"), config=config)


@pytest.mark.parametrize("command", [
    ["evaluate", "--input-fn", f"{MODULE}:eval_input_fn"],
    ["predict", "--input-fn", f"{MODULE}:predict_input_fn", "--output", "{tmp}/p.jsonl"],
    ["export", "--serving-input-fn", f"{MODULE}:serving_input_fn", "--output", "{tmp}/export"],
])
def test_a_lambda_model_fn_run_is_refused_in_one_line_naming_what_to_write(tmp_path, command):
    estimator = lambda_model_fn_estimator(tmp_path)
    estimator.train(tiny_model.train_input_fn, steps=3)
    args = [command[0], estimator.model_dir, *(a.replace("{tmp}", str(tmp_path)) for a in command[1:])]
    done = cli.invoke(app, args)
    assert done.exit_code == 2, done.output
    lines = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in done.output
    assert lines[0].startswith("error: graph.builder: 'hookrun.runner.live:model_fn_")
    assert "write it as module:function in the run directory's config.yaml" in lines[0]
    assert not (tmp_path / "p.jsonl").exists() and not (tmp_path / "export").exists()
