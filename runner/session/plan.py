"""The planned hook order, per lifecycle phase, from a config alone (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass

from hookrun.config_schemas.hook_base import HookConfig

#: Lifecycle phases in the order TensorFlow calls them.
PHASES = ("begin", "after_create_session", "before_run / after_run", "end")
#: When TensorFlow calls each phase.
PHASE_WHEN = {
    "begin": "once, before the graph is finalized",
    "after_create_session": "after each session is created, again after a recovered one",
    "before_run / after_run": "around every step",
    "end": "once, when a stop is requested or the data ends",
}
#: How a run finishes, for each way it can end.
FINISHING_RULES = (
    "end of data (OutOfRangeError): end runs, that step's after_run does not",
    "a hook raising StopIteration or OutOfRangeError: as end of data (end runs), but the data did not end",
    "any other error (graph error, a hook raising): neither that step's after_run nor end runs; exit 1",
    "a coordinator thread's error (coord.request_stop(err)): the loop stops, end runs, then the error "
    "is raised as the session closes; exit 1",
)


@dataclass(frozen=True)
class PlannedHook:
    """One ``hooks:`` entry as it will run.

    Attributes:
        position: index in ``hooks:`` (call order).
        type: the hook type.
        name: display name.
        settings: its non-default settings, ``key=value`` joined by commas.
        mirrors: the TensorFlow or tfestimators source it follows.
    """

    position: int
    type: str
    name: str
    settings: str
    mirrors: str


def describe(hook: HookConfig) -> str:
    """``key=value`` for every setting that differs from the default (``type`` left out)."""
    values = hook.model_dump(exclude_defaults=True, by_alias=True, exclude={"type"})
    return ", ".join(f"{key}={value}" for key, value in values.items())


def plan(hooks: list[HookConfig]) -> list[PlannedHook]:
    """The hooks in call order. Every phase calls them in this same order.

    TensorFlow calls ``begin`` on each hook in list order, then
    ``after_create_session``, then ``before_run`` and ``after_run`` around
    each step, then ``end``; always in list order.
    """
    planned = []
    for index, hook in enumerate(hooks):
        kind = hook.type  # type: ignore[attr-defined]
        name = hook.display_name()
        planned.append(PlannedHook(index, kind, name, describe(hook), type(hook).mirrors))
    return planned
