"""Base class and shared checks for hook configs."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.run_files import HookPath

#: The ``tf.compat.v1.train.SessionRunHook`` methods, in the order the lifecycle calls them.
LIFECYCLE_METHODS = ("begin", "after_create_session", "before_run", "after_run", "end")


#: A problem a hook finds with its place in the run: (YAML path, message, severity).
ListIssue = tuple[tuple[str | int, ...], str, Literal["error", "warning"]]


@dataclasses.dataclass(frozen=True)
class HookList:
    """What a hook sees of the run when it checks its place in it (before TensorFlow).

    Attributes:
        hooks: every ``hooks:`` entry, in order.
        has_validation_data: ``data.validation``, ``data.validation_split`` or ``data.eval_input_fn`` is set.
        builder: ``graph.builder``.
        builder_params: the checked ``graph.params``.
        steps_per_run: ``session.steps_per_run`` (training steps per session call).
    """

    hooks: Sequence[HookConfig]
    has_validation_data: bool
    builder: str
    builder_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    steps_per_run: int = 1


class HookConfig(StrictModel):
    """Base of every hook's config model.

    Subclasses set ``type`` (a ``Literal`` discriminator), ``summary`` (one
    line for ``list-hooks``), ``mirrors`` (the TensorFlow or tfestimators
    source the hook follows), ``catalogue_rank`` and, for timer-style hooks, ``exclusive_pairs``:
    groups of fields of which exactly one must be set (TensorFlow's
    ``SecondOrStepTimer`` raises when both or neither are given).
    """

    summary: ClassVar[str] = ""
    mirrors: ClassVar[str] = ""
    #: Place in the catalogue (``list-hooks``, ``docs/hooks.md``, "known types"): lower first, then by type.
    #: The built-in hooks: TensorFlow's (10-70), tfestimators' (80, 90), the evaluation hooks (100, 110);
    #: ``custom`` (1000) last.
    catalogue_rank: ClassVar[int] = 500
    exclusive_pairs: ClassVar[tuple[tuple[str, ...], ...]] = ()
    reads_tensors: ClassVar[tuple[str, ...]] = ()
    #: The hook type's default for ``chief_only`` (True for the hooks that write the run's own artefacts).
    chief_only_default: ClassVar[bool] = False

    chief_only: bool = Field(
        default=False,
        description="On a cluster (`cluster:` or TF_CONFIG), run this hook on the chief only; without a "
        "cluster every hook runs.",
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Give ``chief_only`` the type's default (``chief_only_default``) and list it after the type's own keys."""
        super().__pydantic_init_subclass__(**kwargs)
        fields = cls.__pydantic_fields__
        field = copy.copy(fields.pop("chief_only"))
        field.default = cls.chief_only_default
        fields["chief_only"] = field
        if cls.__pydantic_complete__:
            # Built already (``defer_build`` turned off): rebuild with the edited field. Deferred models
            # (the default, see ``StrictModel``) are built once, on first use, from the edited fields.
            cls.model_rebuild(force=True)

    @model_validator(mode="after")
    def _exactly_one_of_each_pair(self) -> HookConfig:
        for group in self.exclusive_pairs:
            given = [name for name in group if getattr(self, name) is not None]
            if len(given) != 1:
                names = " or ".join(f"`{n}`" for n in group)
                if given:
                    raise ValueError(f"set exactly one of {names}, not both")
                raise ValueError(f"set exactly one of {names}")
        return self

    # What the hook needs from the runner, asked before the graph is built (see hookrun.hooks.context).

    def display_name(self) -> str:
        """The hook's name in plans and messages: its ``type`` (a ``custom`` hook names its class or functions)."""
        return str(getattr(self, "type", type(self).__name__))

    def needs_evaluation(self) -> bool:
        """True when the hook runs the graph's evaluation part (the runner builds it only then)."""
        return False

    def fetches_unknown_tensors(self) -> bool:
        """True when the hook may fetch any tensor of the graph, known only once it runs (a custom hook).

        Under ``session.steps_per_run`` > 1 the loop then carries every named tensor and ``global_step``
        as the window's last step reads it (see docs/engine.md, "What a hook's fetches and feeds give").
        """
        return False

    def event_dir(self) -> str | None:
        """Where this hook's TensorFlow event files go, or None when it writes none.

        Relative to the run directory (``"."``: the run directory itself). The runner refuses a symlink
        on that path or among the event files there (:func:`hookrun.runner.run_dir.directory.check_event_dirs`).
        """
        return None

    def run_paths(self) -> list[HookPath]:
        """Every file or directory this hook writes, relative to the run directory (see :mod:`run_files`).

        The run directory's registry (:func:`hookrun.config_schemas.run_files.hook_path_issues`) refuses,
        before TensorFlow, a path two hooks write, a path of the run's own, and a file name outside the
        run directory. By default: the hook's event directory (:meth:`event_dir`, its ``output_dir``), which
        may be outside the run directory (the user's choice).
        """
        where = self.event_dir()
        return [] if where is None else [HookPath("output_dir", where, "events", confined=False)]

    def checkpoints_to_keep(self) -> int | None:
        """How many checkpoints the session's ``Saver`` must keep for this hook (``max_to_keep``), or None."""
        return None

    def ends_at_step(self, initial_step: int) -> int | None:
        """The global step at which this hook ends the run, given the restored ``initial_step``; None if it does not."""
        return None

    def tensor_names(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every tensor name this hook gives, with its place under the hook, for resolution before training.

        Returns:
            ``(location under the hook, name)`` for the fields listed in ``reads_tensors`` (a field may
            hold a string, a list of strings or a mapping whose values are strings): ``(("tensors", 1),
            "loss")``, ``(("metrics", "rmse"), "rmse")``.
        """
        found: list[tuple[tuple[str | int, ...], str]] = []
        for field_name in self.reads_tensors:
            value = getattr(self, field_name)
            if value is None:
                continue
            if isinstance(value, str):
                found.append(((field_name,), value))
            elif isinstance(value, dict):
                found.extend(((field_name, key), item) for key, item in value.items())
            else:
                found.extend(((field_name, i), item) for i, item in enumerate(value))
        return found

    def import_paths(self) -> list[tuple[str, str]]:
        """``(key, "module:name")`` for every import path this hook names, for the check before TensorFlow."""
        return []

    def list_issues(self, index: int, run: HookList) -> list[ListIssue]:
        """Problems with this hook's place in the run (another hook it needs, a clash), before TensorFlow.

        Args:
            index: this hook's position in ``hooks:``.
            run: the hook list and what the hooks may ask of the rest of the config.

        Returns:
            ``(YAML path, message, severity)`` per problem; empty by default.
        """
        return []
