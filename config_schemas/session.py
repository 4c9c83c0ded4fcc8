"""Config of the session: where artefacts go and how TensorFlow runs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import Threads


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
    trace: bool = Field(
        default=False,
        description="Record every hook method call (hook, position, method, global step, wall time, "
        "duration) to <run_dir>/trace.jsonl and print a per-hook cost table; same as `hookrun train "
        "--trace`. Off, hooks are not wrapped and the trace costs nothing.",
    )
