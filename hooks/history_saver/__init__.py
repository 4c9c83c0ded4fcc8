"""Config of the ``history_saver`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.bounds import Steps
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.run_files import HookPath


class HistorySaverConfig(HookConfig):
    """Record the loss history; mirrors tfestimators' ``hook_history_saver()``."""

    summary: ClassVar[str] = "Record mean and total loss per window of steps; writes history.csv and a table."
    mirrors: ClassVar[str] = "tfestimators::hook_history_saver"
    catalogue_rank: ClassVar[int] = 90
    reads_tensors: ClassVar[tuple[str, ...]] = ("loss_tensor", "metrics")

    type: Literal["history_saver"] = Field(description="Hook type.")
    every_n_step: Steps = Field(
        default=10, description="Window length (global steps); a row is recorded at each multiple."
    )
    loss_tensor: str = Field(default="loss", description="Name of the loss tensor.")
    metrics: list[str] = Field(
        default_factory=list,
        description="Further scalar tensor names; each adds a column holding its mean over the window.",
    )
    filename: str = Field(
        default="history.csv",
        description="CSV file name inside the run directory (a plain name: no directory, no `..`; not a file "
        "of the run's own, such as `config.yaml`, nor another hook's).",
    )

    def run_paths(self) -> list[HookPath]:
        """The history file, a plain name in the run directory."""
        return [HookPath("filename", self.filename, "file")]
