"""Config of a ``custom`` hook: a user class, or plain functions per lifecycle method."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from hookrun.config_schemas.hook_base import LIFECYCLE_METHODS, HookConfig, HookList, ListIssue
from hookrun.config_schemas.imports import check_import_path
from hookrun.config_schemas.interpolation import placeholder_problems


class CustomHookConfig(HookConfig):
    """A user hook: a ``SessionRunHook`` subclass, or functions per method.

    The function form follows tfestimators' ``session_run_hook()``: each
    given method is a plain function with the signature of the
    ``SessionRunHook`` method it replaces, minus ``self``.
    """

    summary: ClassVar[str] = "Your own hook: a SessionRunHook class, or plain functions per method."
    mirrors: ClassVar[str] = "tf.compat.v1.train.SessionRunHook; tfestimators::session_run_hook"
    catalogue_rank: ClassVar[int] = 1000

    type: Literal["custom"] = Field(description="Hook type.")
    class_: str | None = Field(
        default=None,
        alias="class",
        description="`module:Class` of a hook: a tf.compat.v1.train.SessionRunHook subclass, or any class "
        "with begin, after_create_session, before_run, after_run and end; "
        "modules resolve beside the config file first.",
    )
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments for the class's constructor; in their strings `${run_dir}` and "
        "`${config_dir}` become the run directory and the config file's directory, `${steps_per_run}` "
        "`session.steps_per_run` (`$$` is one `$`).",
    )
    name: str | None = Field(default=None, description="Display name in plans and traces.")
    begin: str | None = Field(default=None, description="`module:function` called as `begin()`.")
    after_create_session: str | None = Field(
        default=None, description="`module:function` called as `after_create_session(session, coord)`."
    )
    before_run: str | None = Field(
        default=None,
        description="`module:function` called as `before_run(run_context)`; may return SessionRunArgs.",
    )
    after_run: str | None = Field(
        default=None, description="`module:function` called as `after_run(run_context, run_values)`."
    )
    end: str | None = Field(default=None, description="`module:function` called as `end(session)`.")

    @field_validator("class_", *LIFECYCLE_METHODS)
    @classmethod
    def _import_path_form(cls, value: str | None) -> str | None:
        return check_import_path(value)

    @model_validator(mode="after")
    def _one_form(self) -> CustomHookConfig:
        functions = [m for m in LIFECYCLE_METHODS if getattr(self, m) is not None]
        if self.class_ is not None and functions:
            raise ValueError(
                f"give either `class` or lifecycle functions, not both (found `class` and `{functions[0]}`)"
            )
        if self.class_ is None and not functions:
            raise ValueError("give `class: module:Class` or at least one of " + ", ".join(LIFECYCLE_METHODS))
        if self.args and self.class_ is None:
            raise ValueError("`args` goes with `class`; functions take no arguments")
        return self

    def display_name(self) -> str:
        """Name shown in plans and tables: ``name``, else the class or functions."""
        if self.name:
            return self.name
        if self.class_:
            return self.class_
        return "functions(" + ", ".join(m for m in LIFECYCLE_METHODS if getattr(self, m)) + ")"

    def import_paths(self) -> list[tuple[str, str]]:
        """The class, or each lifecycle function, as ``(key, "module:name")``."""
        return [(key.rstrip("_"), value) for key in ("class_", *LIFECYCLE_METHODS) if (value := getattr(self, key))]

    def fetches_unknown_tensors(self) -> bool:
        """True: a custom hook's ``before_run`` may ask for any tensor (the loop carries every named one)."""
        return True

    def list_issues(self, index: int, run: HookList) -> list[ListIssue]:
        """Unknown or unterminated ``${...}`` placeholders in ``args``, each at its string.

        Also a warning under ``session.steps_per_run`` > 1: the hook's calls bracket windows of steps.
        """
        problems = placeholder_problems(self.args, ("hooks", index, "args"))
        issues: list[ListIssue] = [(where, message, "error") for where, message in problems]
        if run.steps_per_run > 1:
            issues.append((
                ("hooks", index),
                f"session.steps_per_run is {run.steps_per_run}: this custom hook's before_run/after_run run once "
                f"per window of up to {run.steps_per_run} steps; a named tensor of the step (loss:0) or global_step "
                "it fetches gives its value at the window's last step, and any other tensor of the step, variable "
                "the loop writes, or feed the loop would drop is refused before the first step (set "
                "session.steps_per_run: 1); `${steps_per_run}` in its args tells it N (docs/engine.md, \"What a "
                "hook's fetches and feeds give\")",
                "warning",
            ))
        return issues
