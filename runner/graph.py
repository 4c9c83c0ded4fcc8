"""Assemble the training graph: input pipeline, the builder's model, the train op, named tensors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookrun.config_schemas.run_config import RunConfig
from hookrun.runner.data import TrainingData, make_dataset
from hookrun.runner.device import DevicePlan
from hookrun.runner.errors import SetupError
from hookrun.runner.graph_builders.registry import get_builder
from hookrun.runner.graph_builders.spec import GraphSpec
from hookrun.runner.optimizers import make_train_op


@dataclass
class BuiltGraph:
    """A built (not yet finalized) training graph.

    Attributes:
        graph: the ``tf.Graph``.
        global_step: the ``global_step`` variable.
        train_op: one training step.
        spec: what the builder returned.
        named: hook-visible names -> tensors (``loss``, ``global_step``,
            ``predictions`` when given, and each metric).
    """

    graph: Any
    global_step: Any
    train_op: Any
    spec: GraphSpec
    named: dict[str, Any]


def build_graph(
    tf: Any, config: RunConfig, data: TrainingData, base_dir: Path, plan: DevicePlan, initial_step: int = 0
) -> BuiltGraph:
    """Build the training graph in a fresh ``tf.Graph``.

    The input pipeline sits on the CPU; the builder's ops and the optimizer
    go on ``plan.device``. The graph-level seed is ``data.seed``.

    Args:
        tf: the ``tensorflow`` module.
        config: the run config.
        data: training arrays.
        base_dir: the config's directory (custom builders import from there first).
        plan: the device plan.
        initial_step: restored ``global_step``; the pipeline skips that many batches.

    Returns:
        The built graph (callers may add ops, e.g. summaries, before the session finalizes it).

    Raises:
        SetupError: the builder does not import, fails, or returns no scalar ``loss``.
    """
    graph = tf.Graph()
    with graph.as_default():
        if config.data.seed is not None:
            tf.compat.v1.set_random_seed(config.data.seed)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        with tf.device("/device:CPU:0"):
            dataset = make_dataset(tf, data, config.data, skip_steps=initial_step)
            features, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
            features = tf.identity(features, name="features")
            labels = tf.identity(labels, name="labels")
        builder_name = config.graph.builder
        builder = get_builder(builder_name, base_dir)
        with tf.device(plan.device):
            try:
                spec = GraphSpec.coerce(builder(features, labels, dict(config.graph.params)), builder_name)
            except SetupError:
                raise
            except Exception as err:
                raise SetupError(f"graph.builder: {builder_name} failed: {type(err).__name__}: {err}") from err
            if spec.loss is None or getattr(spec.loss, "shape", None) is None or spec.loss.shape.rank != 0:
                raise SetupError(f"graph.builder: {builder_name} must return a scalar `loss` tensor")
            train_op = spec.train_op
            if train_op is None:
                train_op = make_train_op(tf, config.graph.optimizer, spec.loss, global_step)
        named: dict[str, Any] = {"loss": spec.loss, "global_step": global_step}
        if spec.predictions is not None:
            named["predictions"] = spec.predictions
        for name, tensor in spec.metrics.items():
            if name in named:
                raise SetupError(f"graph.builder: metric name {name!r} clashes with a built-in tensor name")
            named[name] = tensor
    return BuiltGraph(graph=graph, global_step=global_step, train_op=train_op, spec=spec, named=named)
