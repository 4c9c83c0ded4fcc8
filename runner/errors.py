"""Errors the runner raises, each with its documented exit code."""

from __future__ import annotations

from hookrun.config_schemas.errors import HookrunError, PlacedError, SetupError


class TrainingError(HookrunError):
    """Training started but failed (NaN loss, a graph error, a hook raised). Exit code 1."""

    exit_code = 1


class DataError(SetupError):
    """The data does not fit the ``data:`` section (exit code 2), with the config key to blame.

    Attributes:
        loc: the YAML path the checks before training report it at, e.g. ``("data", "validation")``.
    """

    def __init__(self, message: str, loc: tuple[str | int, ...] = ("data", "train")) -> None:
        super().__init__(message)
        self.loc = loc


__all__ = ["DataError", "HookrunError", "PlacedError", "SetupError", "TrainingError"]
