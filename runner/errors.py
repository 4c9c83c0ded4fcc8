"""Errors the runner raises, each with its documented exit code."""

from __future__ import annotations

from hookrun.config_schemas.errors import HookrunError, SetupError


class TrainingError(HookrunError):
    """Training started but failed (NaN loss, a graph error, a hook raised). Exit code 1."""

    exit_code = 1


__all__ = ["HookrunError", "SetupError", "TrainingError"]
