"""Config of the ``checkpoint_saver`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.bounds import Count, Seconds, Steps
from hookrun.config_schemas.hook_base import HookConfig, HookList, ListIssue
from hookrun.config_schemas.run_files import HookPath


class CheckpointSaverConfig(HookConfig):
    """Save checkpoints; mirrors ``tf.compat.v1.train.CheckpointSaverHook``."""

    summary: ClassVar[str] = "Save a TensorFlow checkpoint every N steps or seconds, and at the end."
    mirrors: ClassVar[str] = "tf.compat.v1.train.CheckpointSaverHook"
    catalogue_rank: ClassVar[int] = 20
    chief_only_default: ClassVar[bool] = True
    exclusive_pairs: ClassVar[tuple[tuple[str, ...], ...]] = (("save_steps", "save_secs"),)

    type: Literal["checkpoint_saver"] = Field(description="Hook type.")
    save_steps: Steps | None = Field(
        default=None, description="Save every N global steps (steps). Exclusive with `save_secs`."
    )
    save_secs: Seconds | None = Field(
        default=None, description="Save every N seconds (seconds). Exclusive with `save_steps`."
    )
    checkpoint_dir: str | None = Field(
        default=None,
        description="Directory for checkpoints, relative to the run directory; default: the run directory.",
    )
    checkpoint_basename: str = Field(
        default="model.ckpt", description="Checkpoint file prefix, as TensorFlow's `checkpoint_basename`."
    )
    max_to_keep: Count = Field(
        default=5, description="Most recent checkpoints kept (count), as `tf.compat.v1.train.Saver`."
    )

    def run_paths(self) -> list[HookPath]:
        """The checkpoint directory (the run directory by default), inside the run directory."""
        where = self.checkpoint_dir if self.checkpoint_dir is not None else "."
        # the basename is a file-name prefix in that directory: confined as a file name, and glob-free as a directory
        basename = HookPath(
            "checkpoint_basename", self.checkpoint_basename, "file", glob_free=True, owned=False
        )
        return [HookPath("checkpoint_dir", where, "checkpoints"), basename]

    def checkpoints_to_keep(self) -> int:
        """The session's ``Saver`` keeps ``max_to_keep`` checkpoints (the Scaffold builds it)."""
        return self.max_to_keep

    def list_issues(self, index: int, run: HookList) -> list[ListIssue]:
        """Another checkpoint_saver before this one writes the same directory."""
        mine = self.checkpoint_dir or "."
        for other_index, other in enumerate(run.hooks[:index]):
            if isinstance(other, CheckpointSaverConfig) and (other.checkpoint_dir or ".") == mine:
                message = (
                    f"a second checkpoint_saver writes the same directory as hooks[{other_index}]"
                    "; remove one or give it another `checkpoint_dir`"
                )
                return [(("hooks", index), message, "error")]
        return []
