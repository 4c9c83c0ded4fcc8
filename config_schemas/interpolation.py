"""``${run_dir}``, ``${config_dir}`` and ``${steps_per_run}`` in a custom hook's ``args`` and in ``graph.params``.

No TensorFlow.

A custom hook's ``args`` go to the user's constructor as given, so a relative path in them would
resolve against the process's working directory, while hookrun resolves ``data.train`` and
``session.run_dir`` against the config file. These placeholders name the two directories:

- ``${run_dir}``: the run directory (absolute), after ``--run-dir``;
- ``${config_dir}``: the directory of the config file (absolute);
- ``${steps_per_run}``: ``session.steps_per_run`` (a number as text, ``"1"`` by default): how many
  training steps each ``before_run``/``after_run`` pair brackets.

They are replaced inside any string of ``args``, at any depth of lists and mappings
(``"${run_dir}/tokens.txt"``); ``$$`` writes one ``$`` (``"$${run_dir}"`` stays ``${run_dir}``).
Any other ``${...}``, or a ``${`` without its ``}``, is a config error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

#: The placeholder names, each with what it stands for (for messages and docs).
PLACEHOLDERS: dict[str, str] = {
    "run_dir": "the run directory, after --run-dir",
    "config_dir": "the config file's directory",
    "steps_per_run": "session.steps_per_run, the training steps each before_run/after_run brackets",
}

_TOKEN = re.compile(r"\$(?:(\$)|\{([^}]*)\}|(\{))")

Path_ = tuple[str | int, ...]


def _problems_in(text: str) -> Iterator[str]:
    for match in _TOKEN.finditer(text):
        if match.group(3) is not None:
            yield f"`${{` without a closing `}}` in {text!r}; write `$$` for a literal `$`"
        elif match.group(1) is None and match.group(2) not in PLACEHOLDERS:
            known = ", ".join(f"`${{{name}}}` ({what})" for name, what in PLACEHOLDERS.items())
            yield f"unknown placeholder `${{{match.group(2)}}}`; known: {known}; write `$${{` for a literal `${{`"


def placeholder_problems(value: Any, where: Path_ = ()) -> list[tuple[Path_, str]]:
    """Every unknown or unterminated placeholder in ``value``.

    Args:
        value: a custom hook's ``args`` (strings, numbers, lists, mappings, at any depth).
        where: the location of ``value``, prefixed to each problem's location.

    Returns:
        ``(location, message)`` per problem, the location extended by the keys and indices that lead
        to the string (``("path",)`` for ``args: {path: ...}``); empty when every placeholder is known.
    """
    found: list[tuple[Path_, str]] = []
    if isinstance(value, str):
        found.extend((where, message) for message in _problems_in(value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            found.extend(placeholder_problems(item, (*where, key)))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found.extend(placeholder_problems(item, (*where, i)))
    return found


def interpolate(value: Any, values: Mapping[str, str]) -> Any:
    """Replace the placeholders in every string of ``value``.

    Args:
        value: a custom hook's ``args``; it is not modified.
        values: placeholder name -> text, for every name in :data:`PLACEHOLDERS`.

    Returns:
        A copy of ``value`` with ``${name}`` replaced by ``values[name]`` and ``$$`` by ``$`` in every
        string; other values unchanged.

    Raises:
        ValueError: an unknown placeholder or a ``${`` without its ``}`` (the first one found).
    """
    problems = placeholder_problems(value)
    if problems:
        raise ValueError(problems[0][1])
    return _replace(value, values)


def _replace(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _TOKEN.sub(lambda m: "$" if m.group(1) else values[m.group(2)], value)
    if isinstance(value, Mapping):
        return {key: _replace(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, values) for item in value]
    return value
