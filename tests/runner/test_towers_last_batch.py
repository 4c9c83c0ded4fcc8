"""Towers and the epoch's last, smaller batch of hookrun's own reader (issue 28: "drop_remainder applies").

docs/devices.md: under K towers a last batch whose rows do not divide by K is skipped (one device trains on
it); one that divides is split like any other, so the towers still equal one device on the global batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.runner.config import load_config

from ..conftest import base_config, linear_rows, write_csv


def _run(tmp_path: Path, run_train: Any, name: str, rows: int, device: Any) -> tuple[Any, dict[str, np.ndarray]]:
    import tensorflow as tf

    write_csv(tmp_path / f"{name}.csv", linear_rows(rows))
    config = base_config(
        name=name,
        data={"train": f"{name}.csv", "epochs": 1, "shuffle": False},  # batches of 8: the last one rows % 8
        device=device,
        hooks=[{"type": "checkpoint_saver", "save_steps": 1000}],
    )
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = run_train(load_config(path), run_dir=tmp_path / name)
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / name)))
    weights = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map() if n != "global_step"}
    return result, weights


@pytest.mark.parametrize(("rows", "skipped"), [(62, 0), (61, 1)])  # last batch: 6 rows (splits in 2), 5 (does not)
def test_a_last_batch_that_divides_by_k_is_split_and_one_that_does_not_is_skipped(
    tmp_path, run_train, rows, skipped
):
    one, one_weights = _run(tmp_path, run_train, "one", rows, "cpu")
    towers, towers_weights = _run(tmp_path, run_train, "towers", rows, ["cpu:0", "cpu:1"])
    assert one.end_of_data and towers.end_of_data
    assert one.final_global_step == 8
    assert towers.final_global_step == 8 - skipped
    assert sorted(towers_weights) == sorted(one_weights)
    if not skipped:  # every batch, the short one included, trained as on one device
        for name in one_weights:
            np.testing.assert_allclose(towers_weights[name], one_weights[name], atol=1e-6, err_msg=name)
