"""The two benchmark workloads and the hookrun configs generated for them (no TensorFlow import here).

A workload is one model on one data set at one batch size. Every loop of the benchmark (the
``make_callable`` loop, plain ``sess.run``, ``MonitoredTrainingSession``, Keras ``fit`` and hookrun)
runs on the same preprocessed arrays, produced by hookrun's own data loading from the config below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "configs" / "data"

#: Environment every benchmark subprocess gets (unless already set), as ``hookrun train`` sets it for itself:
#: TensorFlow's C++ INFO/WARNING lines off, oneDNN's reordered ops off. Keras runs under the same settings.
TF_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}

#: The California housing columns used: every numeric one (``ocean_proximity`` is text and left out).
HOUSING_FEATURES = [
    "longitude",
    "latitude",
    "housing_median_age",
    "total_rooms",
    "total_bedrooms",
    "population",
    "households",
    "median_income",
]


@dataclass(frozen=True)
class Workload:
    """One model, data set and batch size.

    Attributes:
        key: short name (``linear``, ``dnn``), used on the command line and in JSON.
        title: one line for the report.
        kind: ``overhead-bound`` or ``compute-bound``.
        steps: steps per timed repeat (N).
        quick_steps: N under ``--quick``.
        data: the config's ``data:`` section (the CSV path absolute).
        graph: the config's ``graph:`` section.
        hidden: hidden layer widths of the equivalent Keras model (empty: linear).
        optimizer: ``(name, learning_rate)``, for the Keras model.
    """

    key: str
    title: str
    kind: str
    steps: int
    quick_steps: int
    data: dict[str, Any]
    graph: dict[str, Any]
    hidden: tuple[int, ...] = field(default=())
    optimizer: tuple[str, float] = ("sgd", 0.05)


WORKLOADS: dict[str, Workload] = {
    "linear": Workload(
        key="linear",
        title="mtcars 3-feature linear regression (mpg ~ cyl + disp + wt), batch 8, SGD lr 0.05",
        kind="overhead-bound",
        steps=3000,
        quick_steps=300,
        data={
            "train": str(DATA_DIR / "mtcars.csv"),
            "label": "mpg",
            "features": ["cyl", "disp", "wt"],
            "batch_size": 8,
            "epochs": None,
            "seed": 0,
        },
        graph={"builder": "linear_regressor", "optimizer": {"name": "sgd", "learning_rate": 0.05}},
        hidden=(),
        optimizer=("sgd", 0.05),
    ),
    "dnn": Workload(
        key="dnn",
        title="California housing DNN 64-32 relu on the 8 numeric columns (total_bedrooms median-filled, "
        "standardized, label / 100000), batch 256, Adam lr 0.001",
        kind="compute-bound",
        steps=1500,
        quick_steps=60,
        data={
            "train": str(DATA_DIR / "california_housing.csv"),
            "label": "median_house_value",
            "features": HOUSING_FEATURES,
            "missing_by_column": {"total_bedrooms": "median"},
            "standardize": True,
            "label_scale": 100000,
            "batch_size": 256,
            "epochs": None,
            "seed": 0,
        },
        graph={
            "builder": "dnn_regressor",
            "params": {"hidden_units": [64, 32], "activation": "relu"},
            "optimizer": {"name": "adam", "learning_rate": 0.001},
        },
        hidden=(64, 32),
        optimizer=("adam", 0.001),
    ),
}


def standard_hooks(steps: int) -> list[dict[str, Any]]:
    """The standard hook set of the issue (``nan_tensor`` placed before ``checkpoint_saver``, as hookrun advises)."""
    return [
        {"type": "stop_at_step", "last_step": steps},
        {"type": "nan_tensor", "loss_tensor": "loss"},
        {"type": "checkpoint_saver", "save_steps": 1000},
        {"type": "logging_tensor", "tensors": ["loss", "global_step"], "every_n_iter": 100},
        {"type": "summary_saver", "save_steps": 100, "tensors": ["loss"]},
        {"type": "step_counter", "every_n_steps": 100},
        {"type": "history_saver", "every_n_step": 100},
        {"type": "progress_bar"},
    ]


#: Hook sets for hookrun: the full standard set, without the two display/record hooks, and stop_at_step alone.
HOOK_SETS = {
    "full": lambda steps: standard_hooks(steps),
    "no_progress_history": lambda steps: [
        h for h in standard_hooks(steps) if h["type"] not in ("progress_bar", "history_saver")
    ],
    "stop_only": lambda steps: [{"type": "stop_at_step", "last_step": steps}],
}


def config_dict(
    workload: Workload,
    steps: int,
    hook_set: str = "full",
    engine: str | None = None,
    extra_hooks: list[dict[str, Any]] | None = None,
    steps_per_run: int = 1,
) -> dict[str, Any]:
    """The hookrun config of ``workload`` as a dict.

    Args:
        workload: the workload.
        steps: ``stop_at_step.last_step``.
        hook_set: a key of :data:`HOOK_SETS`.
        engine: ``session.engine`` (only when the schema has it), or None to leave the default.
        extra_hooks: hooks put first, before the set (e.g. a first-step probe).
        steps_per_run: ``session.steps_per_run`` (left out at 1, the default).
    """
    config: dict[str, Any] = {
        "name": f"bench-{workload.key}",
        "graph": workload.graph,
        "data": workload.data,
        "device": "cpu",
    }
    if engine is not None:
        config["session"] = {"engine": engine}
    if steps_per_run > 1:
        config.setdefault("session", {})["steps_per_run"] = steps_per_run
    config["hooks"] = [*(extra_hooks or []), *HOOK_SETS[hook_set](steps)]
    return config


def write_config(path: Path, config: dict[str, Any]) -> Path:
    """Write ``config`` as YAML to ``path`` and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def available_engines() -> list[str]:
    """The ``session.engine`` values to measure, in report order: ``tf``, then ``hookrun``.

    Reads the ``Literal`` of ``hookrun.config_schemas.session.SessionConfig.engine`` (no TensorFlow import).
    """
    import typing

    from hookrun.config_schemas.session import SessionConfig

    allowed = typing.get_args(SessionConfig.model_fields["engine"].annotation)
    return [name for name in ("tf", "hookrun") if name in allowed]
