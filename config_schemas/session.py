"""Config of the session: where artefacts go and how TensorFlow runs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import MAX_STEPS_PER_RUN, Threads


class SessionConfig(StrictModel):
    """Run directory and ``tf.compat.v1.ConfigProto`` settings."""

    run_dir: str | None = Field(
        default=None,
        description="Run directory (checkpoints, events, history.csv, config.yaml), relative to the "
        "config file; default: runs/<name>. Re-running with the same directory resumes.",
    )
    allow_soft_placement: bool = Field(
        default=False,
        description="Let TensorFlow place ops on the CPU when the requested device is missing "
        "(also allows `device: gpu` on a machine without one).",
    )
    intra_op_parallelism_threads: Threads = Field(
        default=0, description="Threads inside one op (count); 0 lets TensorFlow choose."
    )
    inter_op_parallelism_threads: Threads = Field(
        default=0, description="Ops run in parallel (count); 0 lets TensorFlow choose."
    )
    engine: Literal["hookrun", "tf"] = Field(
        default="hookrun",
        description="Session engine: `hookrun` (TensorFlow's session creation, restore and recovery, with "
        "hookrun's per-step dispatch: one cached Session.make_callable per step shape) or `tf` "
        "(tf.compat.v1.train.MonitoredTrainingSession). Both call the hooks identically.",
    )
    steps_per_run: int = Field(
        default=1,
        ge=1,
        le=MAX_STEPS_PER_RUN,
        description="Training steps per session call (count). 1: one step per call. N > 1: the train op "
        "is a tf.compat.v1.while_loop of up to N steps, each with its own batch and global_step increment "
        "(as TPUEstimator's iterations_per_loop, Keras' steps_per_execution); the built-in hooks act at "
        "window boundaries, stop_at_step stops at exactly its step, history_saver's means cover exactly the "
        "steps run. Not on a cluster. See docs/engine.md.",
    )
    trace: bool = Field(
        default=False,
        description="Record every hook method call (hook, position, method, global step, wall time, "
        "duration) to <run_dir>/trace.jsonl and print a per-hook cost table; same as `hookrun train "
        "--trace`. Off, hooks are not wrapped and the trace costs nothing.",
    )
    mixed_precision: bool = Field(
        default=False,
        description="Float16 mixed precision on the GPU, as tf.compat.v1.mixed_precision."
        "enable_mixed_precision_graph_rewrite did it: Grappler's auto_mixed_precision rewrite (float16 where "
        "numerically safe, on NVIDIA GPUs of compute capability 7.0 or more; nothing on a CPU) and the optimizer "
        "wrapped in MixedPrecisionLossScaleOptimizer with a dynamic loss scale. Needs hookrun to build the "
        "optimizer (graph.optimizer: a builder that returns no train_op). Verified on GPU: no. See docs/devices.md.",
    )
    global_jit_level: Literal["default", "off", "on_1", "on_2"] = Field(
        default="default",
        description="XLA JIT compilation of the whole graph (GraphOptions.OptimizerOptions.global_jit_level): "
        "`default` and `off` compile nothing, `on_1` and `on_2` cluster ops for XLA (`on_2` more aggressively). "
        "Verified on GPU: no. See docs/devices.md.",
    )
    allow_growth: bool = Field(
        default=False,
        description="Allocate GPU memory as needed instead of (nearly) all of it at start "
        "(GPUOptions.allow_growth). Verified on GPU: no.",
    )
    per_process_gpu_memory_fraction: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Fraction of each GPU's memory this process may take, 0 to 1 "
        "(GPUOptions.per_process_gpu_memory_fraction); 0 lets TensorFlow choose. Verified on GPU: no.",
    )
