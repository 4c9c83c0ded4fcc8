"""Resolve the config's ``device`` string against the devices TensorFlow sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hookrun.runner.errors import SetupError


@dataclass(frozen=True)
class DevicePlan:
    """Where the model's ops go.

    Attributes:
        requested: the config's device string (``cpu``, ``gpu``, ``gpu:N``, ``auto``).
        device: the TensorFlow device name for ``tf.device`` (``/device:CPU:0``, ``/device:GPU:N``).
        soft_placement: whether ``allow_soft_placement`` must be on for this plan.
        note: a line for the user when the plan differs from the request (else empty).
    """

    requested: str
    device: str
    soft_placement: bool
    note: str = ""

    @property
    def uses_gpu(self) -> bool:
        """True when the model is placed on a GPU."""
        return "GPU" in self.device


def resolve_device(requested: str, num_gpus: int, allow_soft_placement: bool = False) -> DevicePlan:
    """Choose the TensorFlow device for a config's ``device`` string.

    Pure function: the caller passes how many GPUs TensorFlow sees
    (``len(tf.config.list_physical_devices("GPU"))``), so every branch is
    testable on a machine without one.

    Args:
        requested: ``cpu``, ``gpu`` (GPU 0), ``gpu:N`` or ``auto`` (GPU 0 if any, else CPU).
        num_gpus: GPUs visible to TensorFlow (count, >= 0).
        allow_soft_placement: the session's ``allow_soft_placement`` setting.

    Returns:
        The device plan.

    Raises:
        SetupError: a GPU is requested that does not exist and soft placement
            is off (exit code 2), or the string is not a documented form.
    """
    if requested == "cpu":
        return DevicePlan(requested, "/device:CPU:0", allow_soft_placement)
    if requested == "auto":
        if num_gpus > 0:
            return DevicePlan(requested, "/device:GPU:0", True, "device auto: using GPU 0")
        return DevicePlan(requested, "/device:CPU:0", allow_soft_placement, "device auto: no GPU visible, using CPU")
    if requested == "gpu" or requested.startswith("gpu:"):
        index_text = requested[len("gpu:") :] if requested.startswith("gpu:") else "0"  # "gpu:" alone is invalid
        if not index_text.isdigit():
            raise SetupError(f"device {requested!r} is not one of cpu, gpu, gpu:N or auto")
        index = int(index_text)
        if index < num_gpus:
            return DevicePlan(requested, f"/device:GPU:{index}", allow_soft_placement)
        seen = f"only {num_gpus} GPU(s) visible" if num_gpus else "no GPU visible"
        if allow_soft_placement:
            return DevicePlan(
                requested, f"/device:GPU:{index}", True, f"device {requested}: {seen}, ops fall back to the CPU"
            )
        raise SetupError(
            f"device {requested!r} requested but TensorFlow has {seen}; "
            "use `device: cpu` or `auto`, or set `session.allow_soft_placement: true`"
        )
    raise SetupError(f"device {requested!r} is not one of cpu, gpu, gpu:N or auto")


#: ``session.global_jit_level`` -> the ``OptimizerOptions.GlobalJitLevel`` enum value's name.
JIT_LEVELS = {"default": "DEFAULT", "off": "OFF", "on_1": "ON_1", "on_2": "ON_2"}


def session_config(
    tf: Any,
    plan: DevicePlan,
    intra_op_threads: int = 0,
    inter_op_threads: int = 0,
    *,
    mixed_precision: bool = False,
    global_jit_level: str = "default",
    allow_growth: bool = False,
    per_process_gpu_memory_fraction: float = 0.0,
) -> Any:
    """Build the ``tf.compat.v1.ConfigProto`` for a device plan and the config's GPU switches.

    Args:
        tf: the ``tensorflow`` module.
        plan: from :func:`resolve_device`.
        intra_op_threads: ``intra_op_parallelism_threads`` (0 = TensorFlow's choice).
        inter_op_threads: ``inter_op_parallelism_threads`` (0 = TensorFlow's choice).
        mixed_precision: turn on Grappler's ``auto_mixed_precision`` rewrite
            (``graph_options.rewrite_options``), as a session created after
            ``tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite`` does, without its
            process-wide state. The loss scaling half is the optimizer's
            (:func:`hookrun.runner.graph.optimizers.loss_scaled`).
        global_jit_level: ``default``, ``off``, ``on_1`` or ``on_2``:
            ``graph_options.optimizer_options.global_jit_level`` (XLA JIT).
        allow_growth: ``gpu_options.allow_growth``.
        per_process_gpu_memory_fraction: ``gpu_options.per_process_gpu_memory_fraction`` (0 to 1;
            0 = TensorFlow's choice).

    Returns:
        A ``ConfigProto``; on a CPU plan GPUs are hidden (``device_count={"GPU": 0}``).

    Raises:
        KeyError: ``global_jit_level`` is not one of :data:`JIT_LEVELS` (the config schema allows no other).
    """
    kwargs: dict[str, Any] = {
        "allow_soft_placement": plan.soft_placement,
        "intra_op_parallelism_threads": intra_op_threads,
        "inter_op_parallelism_threads": inter_op_threads,
    }
    if not plan.uses_gpu:
        kwargs["device_count"] = {"GPU": 0}
    config = tf.compat.v1.ConfigProto(**kwargs)
    if mixed_precision:
        rewriter = config.graph_options.rewrite_options
        rewriter.auto_mixed_precision = type(rewriter).ON
    if global_jit_level != "default":
        optimizer_options = config.graph_options.optimizer_options
        optimizer_options.global_jit_level = getattr(type(optimizer_options), JIT_LEVELS[global_jit_level])
    if allow_growth:
        config.gpu_options.allow_growth = True
    if per_process_gpu_memory_fraction:
        config.gpu_options.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
    return config
