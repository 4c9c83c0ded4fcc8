"""Shared fixtures: a small linear CSV, configs written into tmp_path, user modules beside them, a captured console.

TensorFlow's environment is set here, before anything imports it.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # as hookrun.runner.tf_env sets it: tf.keras is tf-keras

import io  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from rich.console import Console  # noqa: E402

from hookrun.config_schemas.data import DataConfig  # noqa: E402
from hookrun.config_schemas.loader import LoadedConfig  # noqa: E402
from hookrun.runner.config import load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"

#: Rows in the generated CSV (rows).
NUM_ROWS = 64
#: Batch size of the default config (rows); NUM_ROWS is a multiple of it.
BATCH_SIZE = 8


def linear_rows(num_rows: int = NUM_ROWS, seed: int = 0) -> np.ndarray:
    """``[a, b, y]`` rows with ``y = 2a - 3b + 1 + noise``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=num_rows)
    b = rng.normal(size=num_rows)
    y = 2 * a - 3 * b + 1 + rng.normal(scale=0.1, size=num_rows)
    return np.stack([a, b, y], axis=1)


def write_data_file(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    """Write ``text`` (a CSV, as given) to ``tmp_path/name``; for data-parsing tests."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def data_config(**kwargs: Any) -> DataConfig:
    """A ``data:`` section for ``data.csv`` with label ``y``; ``kwargs`` add or replace fields."""
    return DataConfig(**{"train": "data.csv", "label": "y", **kwargs})


def write_csv(path: Path, rows: np.ndarray, header: tuple[str, ...] = ("a", "b", "y")) -> Path:
    lines = [",".join(header)] + [",".join(f"{v:.6f}" for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def linear_csv(tmp_path: Path) -> Path:
    """``tmp_path/data.csv``: NUM_ROWS rows of ``a, b, y``."""
    return write_csv(tmp_path / "data.csv", linear_rows())


def base_config(**sections: Any) -> dict[str, Any]:
    """A config dict for ``data.csv`` (linear regression, SGD); ``sections`` replace or extend top-level keys.

    ``data`` and ``graph`` given as dicts update the defaults rather than replace them.
    """
    config: dict[str, Any] = {
        "name": "t",
        "graph": {"builder": "linear_regressor", "optimizer": {"name": "sgd", "learning_rate": 0.05}},
        "data": {"train": "data.csv", "label": "y", "batch_size": BATCH_SIZE, "epochs": 10, "seed": 0},
        "hooks": [],
    }
    for key, value in sections.items():
        if key in ("data", "graph") and isinstance(value, dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return config


@pytest.fixture
def make_config(tmp_path: Path, linear_csv: Path) -> Callable[..., LoadedConfig]:
    """``make_config(hooks=[...], data={...}, graph={...}, filename=...)`` -> ``load_config`` of a YAML in tmp_path."""

    def make(hooks: list[dict[str, Any]] | None = None, filename: str = "config.yaml", **sections: Any) -> LoadedConfig:
        config = base_config(hooks=hooks or [], **sections)
        path = tmp_path / filename
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return load_config(path)

    return make


@pytest.fixture
def write_module(tmp_path: Path) -> Iterator[Callable[[str, str], str]]:
    """``write_module(stem, source)`` writes a module beside the config and returns its (unique) name.

    Names are unique per test so ``sys.modules`` never hands a test another test's module;
    they are removed from ``sys.modules`` afterwards.
    """
    written: list[str] = []

    def write(stem: str, source: str) -> str:
        name = f"{stem}_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def user_module(name: str) -> Any:
    """The user module ``name`` as the runner imported it."""
    return sys.modules[name]


@dataclass
class Captured:
    """A non-terminal rich console writing into a string."""

    console: Console = field(
        default_factory=lambda: Console(file=io.StringIO(), force_terminal=False, width=200, color_system=None)
    )

    @property
    def text(self) -> str:
        return self.console.file.getvalue()  # type: ignore[attr-defined]


@pytest.fixture
def captured() -> Captured:
    return Captured()


@pytest.fixture
def run_train(tmp_path: Path, captured: Captured) -> Callable[..., Any]:
    """``run_train(loaded, run_dir=None)``: the real runner into ``tmp_path/run``, output into ``captured``."""
    from hookrun.runner.trainer import train

    def run(loaded: LoadedConfig, run_dir: Path | None = None) -> Any:
        return train(loaded, run_dir=run_dir or tmp_path / "run", console=captured.console)

    return run


#: A custom hook fetching ``loss:0`` in every ``before_run`` and appending its value to ``LOSSES``, in step order.
LOSS_RECORDER = """
import tensorflow as tf

LOSSES = []


class LossRecorder(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        self.loss = tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.loss)

    def after_run(self, run_context, run_values):
        LOSSES.append(float(run_values.results))
"""


@dataclass
class LossRecorderModule:
    """The :data:`LOSS_RECORDER` module written beside a test's config.

    Attributes:
        entry: its ``hooks:`` entry (``custom``, named ``losses``).
        module: the module's name.
    """

    entry: dict[str, Any]
    module: str

    def losses(self) -> list[float]:
        """The losses recorded so far (the list itself: clear it to start again)."""
        return user_module(self.module).LOSSES


@pytest.fixture
def loss_recorder(write_module: Callable[[str, str], str]) -> LossRecorderModule:
    """A custom hook recording every step's loss (:data:`LOSS_RECORDER`), for history and trace tests."""
    module = write_module("loss_recorder", LOSS_RECORDER)
    return LossRecorderModule({"type": "custom", "class": f"{module}:LossRecorder", "name": "losses"}, module)


#: A graph builder whose loss is NaN from ``global_step >= params.nan_from`` on (the step after that is NaN).
NAN_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
    mse = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - labels))
    step = v1.train.get_global_step()
    loss = tf.where(step >= int(params["nan_from"]), tf.constant(float("nan")), mse)
    return {"loss": tf.identity(loss, name="loss")}
"""

#: A graph builder whose loss asserts ``global_step < params.fail_from`` (an InvalidArgumentError after that).
ASSERT_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    step = v1.train.get_global_step()
    check = tf.debugging.assert_less(step, tf.constant(int(params["fail_from"]), tf.int64), message="step too big")
    # On the inputs, so the train op (which never fetches the loss itself) depends on the check.
    with tf.control_dependencies([check]):
        features = tf.identity(features)
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    mse = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    return {"loss": tf.identity(mse, name="loss")}
"""


def event_scalars(directory: Path, tag: str) -> list[tuple[int, float]]:
    """``(step, value)`` of every scalar summary ``tag`` in the event files of ``directory``, by step."""
    import tensorflow as tf

    found: list[tuple[int, float]] = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.tag == tag:
                    found.append((int(event.step), float(value.simple_value)))
    return sorted(found)
