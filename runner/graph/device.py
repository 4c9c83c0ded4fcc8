"""Resolve the config's ``device`` string against the devices TensorFlow sees; the session's ``ConfigProto``.

Also says which TensorFlow build is installed (:func:`installed_tensorflow`, without importing it, for
``hookrun --version``) and which devices it finds (:func:`describe_tensorflow`, for ``hookrun train``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError


@dataclass(frozen=True)
class DevicePlan:
    """Where the model's ops go.

    Attributes:
        requested: the config's device string (``cpu``, ``gpu``, ``gpu:N``, ``auto``).
        device: the TensorFlow device name for ``tf.device`` (``/device:CPU:0``, ``/device:GPU:N``).
        soft_placement: whether ``allow_soft_placement`` must be on for this plan.
        note: a line for the user when the plan differs from the request (else empty).
        towers: with ``device:`` a list, each tower's TensorFlow device (``/device:GPU:0``, ...), in order;
            ``device`` is then the first tower's (where evaluation and export run). Empty for one device.
    """

    requested: str
    device: str
    soft_placement: bool
    note: str = ""
    towers: tuple[str, ...] = ()

    @property
    def uses_gpu(self) -> bool:
        """True when the model is placed on a GPU."""
        return "GPU" in self.device


def resolve_device(requested: str | list[str], num_gpus: int, allow_soft_placement: bool = False) -> DevicePlan:
    """Choose the TensorFlow device for a config's ``device`` string.

    Pure function: the caller passes how many GPUs TensorFlow sees
    (``len(tf.config.list_physical_devices("GPU"))``), so every branch is
    testable on a machine without one.

    Args:
        requested: ``cpu``, ``gpu`` (GPU 0), ``gpu:N`` or ``auto`` (GPU 0 if any, else CPU); or a list of
            ``cpu:N``/``gpu:N`` (towers, :func:`resolve_towers`).
        num_gpus: GPUs visible to TensorFlow (count, >= 0).
        allow_soft_placement: the session's ``allow_soft_placement`` setting.

    Returns:
        The device plan.

    Raises:
        SetupError: a GPU is requested that does not exist and soft placement
            is off (exit code 2), or the string is not a documented form.
    """
    if isinstance(requested, (list, tuple)):
        return resolve_towers(list(requested), num_gpus, allow_soft_placement)
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


def resolve_towers(requested: list[str], num_gpus: int, allow_soft_placement: bool = False) -> DevicePlan:
    """The device plan of ``device: [gpu:0, gpu:1, ...]`` or ``[cpu:0, cpu:1, ...]``: one tower per entry.

    GPUs must exist (``num_gpus`` counts them) unless soft placement is on. CPU towers ``cpu:0`` to
    ``cpu:K-1`` are logical devices the session creates (``ConfigProto.device_count``,
    :func:`session_config`); they share the host's cores, which makes them a test of exactness, not a
    speed-up.

    Args:
        requested: the config's list (checked by :func:`hookrun.config_schemas.devices.check_towers`).
        num_gpus: GPUs visible to TensorFlow (count, >= 0).
        allow_soft_placement: the session's ``allow_soft_placement`` setting.

    Returns:
        The plan; ``towers`` holds the TensorFlow device of each tower, ``device`` the first.

    Raises:
        SetupError: a listed GPU is not visible and soft placement is off (exit code 2), or an entry is not
            ``cpu:N``/``gpu:N``.
    """
    towers = []
    for entry in requested:
        kind, _, index_text = entry.partition(":")
        if kind not in ("cpu", "gpu") or not index_text.isdigit():
            raise SetupError(f"device: list entry {entry!r} is not cpu:N or gpu:N")
        towers.append(f"/device:{kind.upper()}:{int(index_text)}")
    label = "[" + ", ".join(requested) + "]"
    where = "/device:CPU:0" if len(towers) > 1 else towers[0]  # hookrun.runner.graph.towers.variable_device
    note = f"device {label}: {len(towers)} tower(s), batch split evenly, variables on {where} (on a cluster: the ps)"
    gpus = [int(entry.partition(":")[2]) for entry in requested if entry.startswith("gpu")]
    missing = [index for index in gpus if index >= num_gpus]
    if missing:
        seen = f"only {num_gpus} GPU(s) visible" if num_gpus else "no GPU visible"
        if not allow_soft_placement:
            raise SetupError(
                f"device {label} requested but TensorFlow has {seen}; list only visible GPUs, use "
                f"[cpu:0, cpu:1, ...] (logical CPU devices), or set `session.allow_soft_placement: true`"
            )
        note += f"; {seen}, ops fall back to the CPU"
    soft = allow_soft_placement or bool(missing)
    return DevicePlan(label, towers[0], soft, note, tuple(towers))


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
        A ``ConfigProto``; on a CPU plan GPUs are hidden (``device_count={"GPU": 0}``); with CPU towers up to
        ``cpu:N`` the session makes N + 1 logical CPU devices (``device_count={"CPU": N + 1}``).

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
    cpu_towers = [name for name in plan.towers if "CPU" in name]
    if cpu_towers:  # logical CPU devices /device:CPU:0 .. N, made by the session (graph mode)
        highest = max(int(name.rsplit(":", 1)[1]) for name in cpu_towers)
        kwargs["device_count"] = {**kwargs.get("device_count", {}), "CPU": highest + 1}
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


#: The pip packages that install the ``tensorflow`` module (one of them should be installed, not both).
TENSORFLOW_PACKAGES = ("tensorflow", "tensorflow-cpu")

#: The NVIDIA wheels ``tensorflow[and-cuda]`` installs whose versions matter most (CUDA runtime, cuDNN).
CUDA_WHEELS = ("nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12")


@dataclass(frozen=True)
class TensorFlowInstall:
    """What is installed, read from package metadata and files, without importing TensorFlow.

    Attributes:
        packages: ``(name, version)`` of each installed package of :data:`TENSORFLOW_PACKAGES`.
        build: TensorFlow's ``build_info`` (what ``tf.sysconfig.get_build_info()`` returns: ``is_cuda_build``,
            ``cuda_version``, ``cudnn_version``, ...), read from ``tensorflow/python/platform/build_info.py``;
            empty when TensorFlow or that file is missing.
        cuda_wheels: ``(name, version)`` of each installed :data:`CUDA_WHEELS` package.
    """

    packages: tuple[tuple[str, str], ...] = ()
    build: Mapping[str, Any] = field(default_factory=dict)
    cuda_wheels: tuple[tuple[str, str], ...] = ()


def installed_tensorflow() -> TensorFlowInstall:
    """Find the installed TensorFlow build without importing TensorFlow (fast: for ``hookrun --version``).

    ``build`` is parsed (``ast.literal_eval``, nothing executed) from the generated
    ``tensorflow/python/platform/build_info.py``, the module ``tf.sysconfig.get_build_info()`` returns.

    Returns:
        The install; empty fields for what is not installed or not readable.
    """
    packages = tuple((name, _version(name)) for name in TENSORFLOW_PACKAGES if _version(name))
    wheels = tuple((name, _version(name)) for name in CUDA_WHEELS if _version(name))
    return TensorFlowInstall(packages, _build_info(), wheels)


def _version(package: str) -> str:
    """The installed version of ``package`` ('' if not installed)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _build_info() -> dict[str, Any]:
    """``build_info`` from ``tensorflow/python/platform/build_info.py`` ({} if absent or not as expected)."""
    try:
        spec = importlib.util.find_spec("tensorflow")  # a top-level package: found, not imported
    except (ImportError, ValueError):
        return {}
    if spec is None or not spec.submodule_search_locations:
        return {}
    for location in spec.submodule_search_locations:
        path = Path(location) / "python" / "platform" / "build_info.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:  # build_info = collections.OrderedDict([(key, value), ...])
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "build_info" for t in node.targets)
                and isinstance(node.value, ast.Call)
                and node.value.args
            ):
                try:
                    return dict(ast.literal_eval(node.value.args[0]))
                except (ValueError, TypeError, SyntaxError):
                    return {}
    return {}


def describe_build(version: str, build: Mapping[str, Any]) -> str:
    """One line: the TensorFlow version and build, as ``tf.sysconfig.get_build_info()`` gives it.

    Args:
        version: ``tf.__version__`` or the package version.
        build: the build info (``is_cuda_build``, ``cuda_version``, ``cudnn_version``, ``is_rocm_build``).

    Returns:
        ``tensorflow 2.21.0, CUDA build (CUDA 12.5.1, cuDNN 9)``, ``tensorflow 2.21.0, CPU-only build``,
        or ``tensorflow 2.21.0, build unknown`` when ``build`` is empty.
    """
    if not build:
        return f"tensorflow {version}, build unknown"
    if build.get("is_cuda_build"):
        return (
            f"tensorflow {version}, CUDA build (CUDA {build.get('cuda_version', '?')}, "
            f"cuDNN {build.get('cudnn_version', '?')})"
        )
    if build.get("is_rocm_build"):
        return f"tensorflow {version}, ROCm build (ROCm {build.get('rocm_version', '?')})"
    return f"tensorflow {version}, CPU-only build"


def describe_install(install: TensorFlowInstall) -> list[str]:
    """The lines ``hookrun --version`` prints about TensorFlow (no TensorFlow import).

    Args:
        install: from :func:`installed_tensorflow`.

    Returns:
        The build line (or ``tensorflow: not installed``), the CUDA wheels line on a CUDA build, and a
        warning line when both ``tensorflow`` and ``tensorflow-cpu`` are installed.
    """
    if not install.packages:
        return ["tensorflow: not installed (pip install tensorflow)"]
    names = " and ".join(name for name, _ in install.packages)
    lines = [f"{describe_build(install.packages[0][1], install.build)}; package {names}"]
    if install.build.get("is_cuda_build"):
        if install.cuda_wheels:
            lines.append("CUDA libraries (pip): " + ", ".join(f"{name} {v}" for name, v in install.cuda_wheels))
        else:
            lines.append(
                "CUDA libraries (pip): none; a GPU needs pip install 'tensorflow[and-cuda]' or a system CUDA and cuDNN"
            )
    if len(install.packages) > 1:
        lines.append(
            "warning: both tensorflow and tensorflow-cpu are installed and write the same module; "
            "pip uninstall tensorflow-cpu (on a GPU machine) or tensorflow"
        )
    return lines


def describe_devices(tf: Any) -> str:
    """One line: the physical devices TensorFlow found (``tf.config.list_physical_devices``).

    Args:
        tf: the imported ``tensorflow`` module.

    Returns:
        ``devices: CPU:0, GPU:0 (NVIDIA A100-SXM4-40GB, compute capability 8.0)``; ``(no GPU visible)``
        is added when there is none.
    """
    names = []
    for device in tf.config.list_physical_devices():
        name = device.name.removeprefix("/physical_device:")
        if device.device_type == "GPU":
            try:
                details = tf.config.experimental.get_device_details(device)
            except (ValueError, RuntimeError):
                details = {}
            about = [details["device_name"]] if details.get("device_name") else []
            if details.get("compute_capability"):
                about.append("compute capability " + ".".join(map(str, details["compute_capability"])))
            if about:
                name += f" ({', '.join(about)})"
        names.append(name)
    gpus = "" if tf.config.list_physical_devices("GPU") else " (no GPU visible)"
    return f"devices: {', '.join(names) or 'none'}{gpus}"


def describe_tensorflow(tf: Any) -> str:
    """The line ``hookrun train`` prints at its start: the build of the imported TensorFlow and its devices.

    Args:
        tf: the imported ``tensorflow`` module.

    Returns:
        ``tensorflow 2.21.0, CUDA build (CUDA 12.5.1, cuDNN 9); devices: CPU:0 (no GPU visible)``.
    """
    return f"{describe_build(tf.__version__, tf.sysconfig.get_build_info())}; {describe_devices(tf)}"
