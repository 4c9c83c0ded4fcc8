"""hookrun's errors, shared by every layer (config, hooks, runner, CLI), each with its documented exit code.

Exit codes: 0 success; 1 training failed; 2 invalid config, data or usage.
"""

from __future__ import annotations

import re


class HookrunError(Exception):
    """Base of hookrun's own errors: a one-line message and an exit code."""

    exit_code: int = 1


class SetupError(HookrunError):
    """The config cannot run as written (bad CSV, unknown tensor, missing GPU, bad import). Exit code 2."""

    exit_code = 2


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_yaml_path(text: str) -> tuple[str | int, ...]:
    """``hooks[2].class`` -> ``("hooks", 2, "class")``: the inverse of ``format_yaml_path`` for plain keys."""
    return tuple(key if key else int(index) for key, index in _PATH_PART.findall(text))


class PlacedError(SetupError):
    """A setup error caused by one config key (exit 2); the runner reports it at that key's ``file:line:column``.

    Attributes:
        what: the config place as a YAML path (``graph.builder``, ``hooks[2].class``).
        loc: the same place as keys and indices (``("hooks", 2, "class")``), for ``LoadedConfig.issue``.
        reason: the message without the place.
    """

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.loc = parse_yaml_path(what)
        self.reason = reason


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


class DataWarning(UserWarning):
    """Something in the data that training can use but probably should not (an infinite value).

    ``hookrun``'s entry point prints it as one line, ``warning: <message>``, without a source path.
    """
