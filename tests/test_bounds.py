"""Every number in a config has the bound TensorFlow or the OS can honour (``config_schemas/bounds.py``).

``tests/bad_configs/value_*_beyond_*`` and friends check that ``validate`` refuses values past a
bound; here, a config with every bound at its largest allowed value trains for real.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hookrun.config_schemas import bounds
from hookrun.config_schemas.loader import ConfigError, LoadedConfig


def test_every_bound_at_its_largest_value_trains(make_config: Callable[..., LoadedConfig], run_train: Any) -> None:
    steps = bounds.INT64_MAX
    loaded = make_config(
        graph={
            "optimizer": {"name": "sgd", "learning_rate": 0.05, "decay": {"decay_steps": steps, "decay_rate": 0.5}},
        },
        data={"epochs": steps, "seed": bounds.MAX_SEED, "batch_size": 8},
        device=f"gpu:{bounds.MAX_GPU_INDEX}",
        session={
            "allow_soft_placement": True,
            "intra_op_parallelism_threads": bounds.MAX_THREADS,
            "inter_op_parallelism_threads": bounds.MAX_THREADS,
        },
        hooks=[
            {"type": "progress_bar", "refresh_secs": bounds.MAX_SECONDS, "total": steps},
            {"type": "stop_at_step", "num_steps": steps},
            {"type": "stop_at_step", "last_step": 12},
            {"type": "step_counter", "every_n_steps": steps},
            {"type": "summary_saver", "save_steps": steps},
            {"type": "history_saver", "every_n_step": steps},
            {"type": "checkpoint_saver", "save_steps": steps, "max_to_keep": bounds.INT32_MAX},
            {"type": "checkpoint_saver", "save_secs": bounds.MAX_SECONDS, "checkpoint_dir": "other"},
        ],
    )
    result = run_train(loaded)
    assert result.final_global_step == 12
    assert Path(result.checkpoint_path).name == "model.ckpt-12"


@pytest.mark.parametrize(
    ("section", "values"),
    [
        ("data", {"epochs": bounds.INT64_MAX + 1}),
        ("data", {"seed": bounds.MAX_SEED + 1}),
        ("data", {"batch_size": bounds.INT32_MAX + 1}),
        ("session", {"intra_op_parallelism_threads": bounds.MAX_THREADS + 1}),
        ("device", f"gpu:{bounds.MAX_GPU_INDEX + 1}"),
        ("hooks", [{"type": "stop_at_step", "last_step": bounds.INT64_MAX + 1}]),
        ("hooks", [{"type": "logging_tensor", "tensors": ["loss"], "every_n_secs": bounds.MAX_SECONDS * 2}]),
    ],
)
def test_one_past_a_bound_is_refused(make_config: Callable[..., LoadedConfig], section: str, values: Any) -> None:
    with pytest.raises(ConfigError, match="must be at most|GPU index is at most"):
        make_config(**{section: values})
