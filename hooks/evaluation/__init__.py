"""Config of the ``evaluation`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.bounds import Seconds, Steps
from hookrun.config_schemas.hook_base import HookConfig, HookList, ListIssue

#: Why an ``evaluation`` hook cannot run (reported at the hook).
NO_VALIDATION_DATA = (
    "evaluation needs validation data: set `data.validation_split` (e.g. 0.2) or `data.validation` (a CSV file), "
    "or `data.eval_input_fn` with `data.input_fn`"
)


class EvaluationConfig(HookConfig):
    """Evaluate on the validation data while training; mirrors ``tf.estimator.experimental.InMemoryEvaluatorHook``."""

    summary: ClassVar[str] = (
        "Evaluate loss and metrics on the whole validation set every N steps or seconds and at the end; "
        "adds val_* to the history."
    )
    mirrors: ClassVar[str] = "tf.estimator.experimental.InMemoryEvaluatorHook"
    catalogue_rank: ClassVar[int] = 100
    chief_only_default: ClassVar[bool] = True
    exclusive_pairs: ClassVar[tuple[tuple[str, ...], ...]] = (("every_n_steps", "every_n_secs"),)

    type: Literal["evaluation"] = Field(description="Hook type.")
    every_n_steps: Steps | None = Field(
        default=None,
        description="Evaluate at every multiple of N global steps (steps). Exclusive with `every_n_secs`.",
    )
    every_n_secs: Seconds | None = Field(
        default=None, description="Evaluate every N seconds (seconds). Exclusive with `every_n_steps`."
    )
    at_end: bool = Field(
        default=True, description="Also evaluate when training ends (unless that step was just evaluated)."
    )
    output_dir: str = Field(
        default="eval",
        description="TensorBoard event directory for the validation scalars, relative to the run directory.",
    )
    log: bool = Field(default=True, description="Print one line with the values after each evaluation.")

    def event_dir(self) -> str:
        """The validation scalars' event files go to ``output_dir`` (default ``eval``)."""
        return self.output_dir

    def needs_evaluation(self) -> bool:
        """The evaluation hook runs the graph's evaluation part."""
        return True

    def list_issues(self, index: int, run: HookList) -> list[ListIssue]:
        """No validation data, or a second evaluation hook."""
        if not run.has_validation_data:
            return [(("hooks", index), NO_VALIDATION_DATA, "error")]
        first = next(i for i, h in enumerate(run.hooks) if isinstance(h, EvaluationConfig))
        if first != index:
            return [(("hooks", index), f"a second evaluation hook (the first is hooks[{first}]); keep one", "error")]
        return []
