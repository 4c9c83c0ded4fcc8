"""Where a run's ops go: the device plan (one device or towers) and, on a cluster, the task's device function.

A :class:`Placement` is a component of a run's role (:mod:`hookrun.runner.roles`): the local role and a
cluster task both hold one, so towers (``device: [gpu:0, gpu:1]``, a device plan) and a cluster's
``replica_device_setter`` (a device function) are two fields of the same object, and a cluster task with
towers is one placement with both (how the graph builds that combination is
:func:`hookrun.runner.graph.build.build_graph`'s business).

No TensorFlow is imported here; the functions that need it take the module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.runner.graph.device import DevicePlan, resolve_device, session_config

#: The ``session:`` GPU options that change nothing on a CPU plan (a note says so rather than let them look active).
GPU_ONLY_SESSION_KEYS = ("mixed_precision", "allow_growth", "per_process_gpu_memory_fraction")


@dataclass(frozen=True)
class Placement:
    """Where the training graph's ops go.

    Attributes:
        plan: the device plan (:class:`hookrun.runner.graph.device.DevicePlan`): one device, or with
            ``device:`` a list, the towers (``plan.towers``, :mod:`hookrun.runner.graph.towers`).
        device_function: a ``tf.device`` function applied around the whole graph, or None: on a cluster,
            ``replica_device_setter`` (variables on the parameter servers, the rest on this task).
        wrap_optimizer: wraps the optimizer before ``minimize`` (``SyncReplicasOptimizer`` with
            ``cluster.sync_replicas``), or None.
        notes: lines for the user about the placement (a device fallback, GPU options that act on GPUs only).
    """

    plan: DevicePlan
    device_function: Callable[[Any], str] | None = None
    wrap_optimizer: Callable[[Any], Any] | None = None
    notes: tuple[str, ...] = ()

    @property
    def device(self) -> str:
        """The model's TensorFlow device (the first tower's with towers): ``/device:CPU:0``."""
        return self.plan.device

    @property
    def towers(self) -> tuple[str, ...]:
        """Each tower's TensorFlow device, in order; empty for one device."""
        return self.plan.towers

    def session_config(self, tf: Any, config: RunConfigBase) -> Any:
        """The training session's ``tf.compat.v1.ConfigProto`` from ``session:`` and the device plan.

        See :func:`hookrun.runner.graph.device.session_config` (threads, GPU switches, logical CPU towers).
        """
        session = config.session
        return session_config(
            tf,
            self.plan,
            session.intra_op_parallelism_threads,
            session.inter_op_parallelism_threads,
            mixed_precision=session.mixed_precision,
            global_jit_level=session.global_jit_level,
            allow_growth=session.allow_growth,
            per_process_gpu_memory_fraction=session.per_process_gpu_memory_fraction,
        )


def device_placement(
    tf: Any,
    config: RunConfigBase,
    device_function: Callable[[Any], str] | None = None,
    wrap_optimizer: Callable[[Any], Any] | None = None,
) -> Placement:
    """Resolve ``device:`` against the GPUs TensorFlow sees, with a role's device function and optimizer wrapper.

    Args:
        tf: the ``tensorflow`` module (its ``tf.config.list_physical_devices("GPU")`` is counted).
        config: the run config (``device``, ``session.allow_soft_placement`` and the GPU options).
        device_function: the role's placement around the graph (a cluster task's), or None.
        wrap_optimizer: the role's optimizer wrapper, or None.

    Returns:
        The placement, with its notes (a fallback; GPU options set for a model on the CPU).

    Raises:
        SetupError: a GPU is asked for and none is there (:func:`hookrun.runner.graph.device.resolve_device`).
    """
    num_gpus = len(tf.config.list_physical_devices("GPU"))
    plan = resolve_device(config.device, num_gpus, config.session.allow_soft_placement)
    notes = [plan.note] if plan.note else []
    if not plan.uses_gpu:  # set for a GPU, on a CPU: say they change nothing here rather than let them look active
        idle = [f"session.{key}" for key in GPU_ONLY_SESSION_KEYS if getattr(config.session, key)]
        if idle:
            notes.append(
                f"{', '.join(idle)}: the model runs on the CPU; the float16 rewrite and the GPU memory options "
                "act on GPUs only (docs/devices.md)"
            )
    return Placement(plan, device_function, wrap_optimizer, tuple(notes))
