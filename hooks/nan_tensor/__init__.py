"""Config of the ``nan_tensor`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.hook_base import HookConfig, HookList, ListIssue


class NanTensorConfig(HookConfig):
    """Stop or fail on a NaN loss; mirrors ``tf.compat.v1.train.NanTensorHook``."""

    summary: ClassVar[str] = "Fail (exit 1) or stop when the loss becomes NaN."
    mirrors: ClassVar[str] = "tf.compat.v1.train.NanTensorHook"
    catalogue_rank: ClassVar[int] = 40
    reads_tensors: ClassVar[tuple[str, ...]] = ("loss_tensor",)

    type: Literal["nan_tensor"] = Field(description="Hook type.")
    loss_tensor: str = Field(default="loss", description="Name of the loss tensor to watch.")
    fail_on_nan_loss: bool = Field(
        default=True,
        description="Raise (training fails, exit 1) on NaN; if false, log and request a stop.",
    )

    def list_issues(self, index: int, run: HookList) -> list[ListIssue]:
        """A hook that saves checkpoints comes before this one (a NaN step could be saved first): a warning."""
        saver = next((i for i, h in enumerate(run.hooks[:index]) if h.checkpoints_to_keep() is not None), None)
        if saver is None:
            return []
        message = (
            f"nan_tensor comes after {run.hooks[saver].display_name()} (hooks[{saver}]): a NaN step could be "
            "checkpointed before it is caught; move nan_tensor up"
        )
        return [(("hooks", index), message, "warning")]
