"""Shared set-up of tests/estimator: quiet TensorFlow, and the tiny model's plain-TensorFlow reference."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def plain_training(steps: int, learning_rate: float = 0.1) -> dict[str, np.ndarray]:
    """The tiny model_fn and train_input_fn in a plain tf.compat.v1 MonitoredTrainingSession: ``w`` and ``b``."""
    import tensorflow as tf

    from tests.estimator import tiny_model

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        params = {"learning_rate": learning_rate}
        features, labels = v1.data.make_one_shot_iterator(tiny_model.train_input_fn(params)).get_next()
        spec = tiny_model.model_fn(features, labels, "train", params)
        w, b = (v for v in v1.global_variables() if v.op.name in ("w", "b"))
        with v1.train.MonitoredTrainingSession(checkpoint_dir=None, save_summaries_steps=None) as session:
            for _ in range(steps):
                session.run(spec.train_op)
            return session.run({"w": w, "b": b})


@pytest.fixture
def estimator(tmp_path: Any) -> Any:
    """A tiny-model Estimator in ``tmp_path/model``: checkpoints every 3 steps, no summaries or step logs."""
    from hookrun import estimator as tf_estimator
    from tests.estimator import tiny_model

    config = tf_estimator.RunConfig(save_checkpoints_steps=3, save_summary_steps=None, log_step_count_steps=None,
                                    tf_random_seed=0)
    return tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(tmp_path / "model"), config=config,
                                  params={"learning_rate": 0.1})
