"""A TFRecord feature with several values and no parse spec (issue 24): one line naming the file, record, feature, fix.

The built-in reader takes one value per feature unless ``data.columns`` declares the feature's parse spec
(docs/data.md, "Tensor features"). ``hookrun train`` on records whose ``pixels`` hold 784 values exits 2 with
the file, the record, the feature and the fix (``pixels: {type: float, shape: [784]}``, ``varlen``, or the
user's ``data.input_fn``), whether the record is among the first ones read in Python or found later by
TensorFlow's parser (record 250).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


def _write(path: Path, wide: set[int], rows: int) -> None:
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(1, rows + 1):
            pixels = [float(k % 7) for k in range(784 if i in wide else 1)]
            feature = {
                "pixels": tf.train.Feature(float_list=tf.train.FloatList(value=pixels)),
                "y": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i % 3)])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.mark.parametrize("rows, wide", [(8, set(range(1, 9))), (300, {250})], ids=["every record", "record 250"])
def test_a_feature_with_784_values_and_no_parse_spec_names_the_fix(tmp_path, rows, wide):
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    _write(tmp_path / "images.tfrecord", wide, rows)
    config = {
        "name": "wide",
        "graph": {"builder": "linear_regressor"},
        "data": {"train": "images.tfrecord", "label": "y", "batch_size": 4, "epochs": 1},
        "hooks": [{"type": "stop_at_step", "last_step": 2}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if "feature 'pixels' has 784 values" in line]
    assert len(lines) == 1, output
    line = lines[0]
    assert f"images.tfrecord: record {min(wide)}: feature 'pixels' has 784 values" in line, line
    assert "data.columns" in line and "pixels: {type: float, shape: [784]}" in line, line
    assert "varlen: ragged" in line and "data.input_fn" in line, line
    assert not (tmp_path / "run" / "checkpoint").exists()
