"""Config of the ``summary_saver`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from hookrun.config_schemas.bounds import Seconds, Steps
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.run_files import TRAIN_EVENT_DIR


class SummarySaverConfig(HookConfig):
    """Write TensorBoard summaries (scalars, histograms); mirrors ``tf.compat.v1.train.SummarySaverHook``."""

    summary: ClassVar[str] = (
        "Write TensorBoard summaries of named tensors (scalars; histograms for other shapes) every N steps or seconds."
    )
    mirrors: ClassVar[str] = "tf.compat.v1.train.SummarySaverHook"
    catalogue_rank: ClassVar[int] = 50
    chief_only_default: ClassVar[bool] = True
    exclusive_pairs: ClassVar[tuple[tuple[str, ...], ...]] = (("save_steps", "save_secs"),)
    reads_tensors: ClassVar[tuple[str, ...]] = ("tensors",)

    type: Literal["summary_saver"] = Field(description="Hook type.")
    save_steps: Steps | None = Field(
        default=None, description="Write every N global steps (steps). Exclusive with `save_secs`."
    )
    save_secs: Seconds | None = Field(
        default=None, description="Write every N seconds (seconds). Exclusive with `save_steps`."
    )
    tensors: list[str] = Field(
        default_factory=lambda: ["loss"],
        description="Tensor names to summarise, each under its own name: a scalar tensor as a TensorBoard "
        "scalar, any other shape as a histogram; a variable's name reads its value.",
    )
    output_dir: str | None = Field(
        default=None,
        description="Event file directory, relative to the run directory; default: `train` (TensorBoard shows "
        "the run as `<run>/train`, beside the evaluation's `<run>/eval`).",
    )
    model_summaries: bool = Field(
        default=True,
        description="Also write the builder's own summaries (tf.compat.v1.summary.* in its train call: the "
        "SUMMARIES collection), merged, as Estimator wrote them; false: only `tensors`. A model_fn's "
        "`Scaffold(summary_op=...)` replaces them.",
    )

    def event_dir(self) -> str:
        """The event files go to ``output_dir`` (default: ``train``, :data:`TRAIN_EVENT_DIR`)."""
        return self.output_dir or TRAIN_EVENT_DIR

    @field_validator("tensors")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one tensor")
        return value
