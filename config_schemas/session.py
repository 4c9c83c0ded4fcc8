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
