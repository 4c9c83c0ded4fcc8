"""A config's YAML source: read it, compose it, convert it to data that remembers its positions.

The file is read as UTF-8 and composed with PyYAML's safe composer (nothing is
ever constructed from a tag); the node graph is converted to plain Python data
here (so duplicate keys, non-string keys and non-standard tags are caught with
their positions). Every problem becomes a :class:`ConfigIssue` pointing at the
file, line and column of the offending YAML node; :class:`LoadedConfig` keeps
the positions for checks made after loading. :mod:`.loader` puts the steps
together; :mod:`.model_paths` follows YAML paths through the models.

This module never imports TensorFlow.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hookrun.common.errors import HookrunError
from hookrun.config_schemas.run_config import RunConfigBase

__all__ = [
    "ConfigError",
    "ConfigIssue",
    "LoadedConfig",
    "LocationIndex",
    "Override",
    "compose_yaml",
    "format_yaml_path",
    "locate",
    "read_text",
    "short_repr",
    "to_data",
]

#: Largest config file read (bytes); a hookrun config is a few kilobytes.
MAX_FILE_BYTES = 1024 * 1024
#: Most values (scalars, lists, mappings) in one config after expanding aliases.
MAX_VALUES = 100_000
#: Deepest nesting of lists and mappings.
MAX_DEPTH = 64
#: Longest repr of a bad value quoted in a message.
MAX_VALUE_REPR = 60

OVERRIDE_FILE = "--set"
_TAG_PREFIX = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG_PREFIX + t for t in ("str", "int", "float", "bool", "null"))
_SEQ, _MAP, _MERGE = (_TAG_PREFIX + t for t in ("seq", "map", "merge"))
#: The tag of a null scalar (an empty document is one).
NULL_TAG = _NULL
#: Tags PyYAML's resolver gives plain scalars that hookrun reads as text.
_TEXT_TAGS = {_STR, _TAG_PREFIX + "timestamp", _TAG_PREFIX + "value", _MERGE}
_SCALAR_KIND = {_INT: "an integer", _FLOAT: "a number", _BOOL: "a boolean", _NULL: "null"}
_PLAIN_KEY = re.compile(r"^[^.\[\]\s\"']+$")

Loc = tuple[str | int, ...]


# --------------------------------------------------------------------------- issues


@dataclass(frozen=True)
class ConfigIssue:
    """One problem found in a config, located as precisely as possible.

    Attributes:
        file: the config file path as given, or ``"--set"`` for an override.
        line: 1-based line, or None when unknown.
        column: 1-based column, or None when unknown.
        path: YAML path like ``hooks[2].every_n_iter``; ``""`` for the whole document.
        message: what is wrong, the bad value, what is allowed, a suggestion.
        severity: ``"error"`` or ``"warning"``.
    """

    file: str
    line: int | None
    column: int | None
    path: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def format(self) -> str:
        """Format the issue as one compiler-style line.

        Returns:
            str: ``file:line:column: severity: path: message``; a missing
            line, column or path is left out with its separator. Always one
            line: line breaks and other unprintable characters (which a key
            or value in the file may hold) are escaped as in a Python string
            literal, a line break as backslash-n.
        """
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.severity}: "
        if self.path:
            text += f"{self.path}: "
        return _one_line(text + self.message)


def _one_line(text: str) -> str:
    """Escape line breaks and other unprintable characters (they may come from keys and values in the file)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def _issue_order(issue: ConfigIssue) -> tuple[bool, int, int]:
    return (issue.line is None, issue.line or 0, issue.column or 0)


class ConfigError(HookrunError):
    """A config that cannot be used; carries every issue found.

    Attributes:
        exit_code: process exit code for a bad config (2, a usage error).
        issues: the issues, sorted in file order (line, column); issues
            without a line (file-level or ``--set``) come last.
    """

    exit_code = 2

    def __init__(self, issues: Sequence[ConfigIssue]) -> None:
        """Create the error.

        Args:
            issues: at least one issue; they are sorted in file order.
        """
        self.issues: list[ConfigIssue] = sorted(issues, key=_issue_order)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(issue.format() for issue in self.issues)


# --------------------------------------------------------------------------- paths


def format_yaml_path(loc: Sequence[str | int]) -> str:
    """Format a location as a YAML path.

    Args:
        loc: keys and list indices, e.g. ``("hooks", 2, "every_n_iter")``.

    Returns:
        str: e.g. ``hooks[2].every_n_iter``; ``""`` for the document itself.
        Keys that contain dots, brackets, quotes or spaces are written as
        ``["a.b"]``.
    """
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            text += f".{part}" if text else part
        else:
            escaped = part.replace("\\", "\\\\").replace('"', '\\"')
            text += f'["{escaped}"]'
    return text


def short_repr(value: Any) -> str:
    """A bad value as a message quotes it: YAML words for null and booleans, at most ``MAX_VALUE_REPR`` characters."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = repr(value)
    if len(text) > MAX_VALUE_REPR:
        text = text[: MAX_VALUE_REPR - 3] + "..."
    return text


# --------------------------------------------------------------------------- location index


@dataclass
class Where:
    """Marks of one YAML value: its key (mapping entries only) and its node, and the file that set it.

    ``source`` is None for the config's own file (:attr:`LoadedConfig.source`), else the ``--config``
    file (as given) whose value replaced it.
    """

    key: tuple[int, int] | None
    value: tuple[int, int]
    scalar: bool
    source: str | None = None


def node_mark(node: Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


@dataclass
class LocationIndex:
    """YAML path tuple -> marks, for the nodes of the file."""

    entries: dict[Loc, Where] = field(default_factory=dict)

    def nearest(self, loc: Loc) -> tuple[Loc, Where] | None:
        """The entry at ``loc``, or at its nearest parent that has one."""
        for end in range(len(loc), -1, -1):
            found = self.entries.get(tuple(loc[:end]))
            if found is not None:
                return tuple(loc[:end]), found
        return None

    def prune_below(self, loc: Loc) -> None:
        """Drop the entries strictly below ``loc`` (an override replaced that subtree)."""
        n = len(loc)
        for key in [k for k in self.entries if len(k) > n and k[:n] == loc]:
            del self.entries[key]


@dataclass(frozen=True)
class Override:
    """One applied ``--set`` override: the YAML path it set and its text as given."""

    path: Loc
    text: str


# --------------------------------------------------------------------------- loaded config


@dataclass
class LoadedConfig:
    """A validated config and where it came from.

    Attributes:
        config: the validated model.
        path: absolute path of the config file.
        base_dir: directory of the config file; relative data paths and
            import paths resolve here.
        source: the path as given by the user (used in messages).
    """

    config: RunConfigBase
    path: Path
    base_dir: Path
    source: str = ""
    _index: LocationIndex = field(default_factory=LocationIndex, repr=False, compare=False)
    _overrides: tuple[Override, ...] = field(default=(), repr=False, compare=False)

    @property
    def overrides(self) -> tuple[str, ...]:
        """The ``--set`` overrides applied, as given (``graph.optimizer.learning_rate=0.01``), in order."""
        return tuple(override.text for override in self._overrides)

    def where(self, *loc: str | int) -> tuple[int | None, int | None]:
        """Find the line and column of the YAML node at a location.

        Args:
            *loc: keys and indices, e.g. ``where("hooks", 2, "save_steps")``.

        Returns:
            tuple[int | None, int | None]: the 1-based (line, column) of the
            value when it is a scalar, else of its key (or list item). A
            location with no node of its own (a default value) falls back to
            its nearest existing parent; (None, None) when nothing is known.
        """
        found = self._index.nearest(tuple(loc))
        if found is None:
            return (None, None)
        return _point(found[1], at_value=None)

    def issue(
        self, loc: tuple[str | int, ...], message: str, severity: Literal["error", "warning"] = "error"
    ) -> ConfigIssue:
        """Build an issue located at ``loc``, for checks made after loading.

        Args:
            loc: keys and indices of the value the issue is about.
            message: what is wrong and how to fix it.
            severity: ``"error"`` or ``"warning"``.

        Returns:
            ConfigIssue: with file, line, column and path filled in; a value
            set by ``--set`` is reported against ``--set``.
        """
        return locate(self.source, self._index, self._overrides, tuple(loc), message, severity)


def _point(where: Where, at_value: bool | None) -> tuple[int, int]:
    """Pick the key or value mark; ``at_value=None`` means: value if scalar, else key."""
    if at_value is None:
        at_value = where.scalar
    if at_value or where.key is None:
        return where.value
    return where.key


def locate(
    source: str,
    index: LocationIndex,
    overrides: Sequence[Override],
    loc: Loc,
    message: str,
    severity: Literal["error", "warning"] = "error",
    at_value: bool | None = None,
) -> ConfigIssue:
    """Build an issue at ``loc``, attributing it to a ``--set`` override when one caused it."""
    path = format_yaml_path(loc)
    for override in reversed(overrides):
        n = len(override.path)
        if loc[:n] == override.path or (override.path[: len(loc)] == loc and loc not in index.entries):
            return ConfigIssue(OVERRIDE_FILE, None, None, path, f"`{override.text}`: {message}", severity)
    for override in reversed(overrides):
        if loc and override.path[: len(loc)] == loc:
            message += f" (after `--set {override.text}`)"
            break
    found = index.nearest(loc)
    if found is None:
        return ConfigIssue(source, None, None, path, message, severity)
    line, column = _point(found[1], at_value if found[0] == loc else False)
    return ConfigIssue(found[1].source or source, line, column, path, message, severity)


# --------------------------------------------------------------------------- YAML -> data


class _Builder:
    """Convert a composed YAML node graph to plain data, collecting issues."""

    def __init__(self, source: str, index: LocationIndex | None) -> None:
        self.source = source
        self.index = index
        self.issues: list[ConfigIssue] = []
        self.count = 0
        self.active: set[int] = set()
        self.constructor = SafeConstructor()

    def error(self, node: Node | None, loc: Loc, message: str) -> None:
        line, column = node_mark(node) if node is not None else (None, None)
        self.issues.append(ConfigIssue(self.source, line, column, format_yaml_path(loc), message))

    def record(self, loc: Loc, key: Node | None, node: Node) -> None:
        if self.index is not None:
            self.index.entries[loc] = Where(
                node_mark(key) if key is not None else None, node_mark(node), isinstance(node, ScalarNode)
            )

    def convert(self, node: Node, loc: Loc) -> Any:
        self.count += 1
        if self.count > MAX_VALUES:
            raise _TooBig(node)
        if len(loc) > MAX_DEPTH:
            raise _TooDeep(node, loc)
        if id(node) in self.active:
            self.error(node, loc, "an alias refers to the list or mapping that contains it (a recursive anchor)")
            return None
        if isinstance(node, ScalarNode):
            return self.scalar(node, loc)
        if not self.tag_ok(node, _SEQ if isinstance(node, SequenceNode) else _MAP, loc):
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                items = []
                for i, item in enumerate(node.value):
                    self.record((*loc, i), None, item)
                    items.append(self.convert(item, (*loc, i)))
                return items
            return self.mapping(node, loc)
        finally:
            self.active.discard(id(node))

    def tag_ok(self, node: Node, expected: str, loc: Loc) -> bool:
        if node.tag == expected:
            return True
        tag = node.tag
        shown = "!!" + tag[len(_TAG_PREFIX) :] if tag.startswith(_TAG_PREFIX) else tag
        self.error(
            node,
            loc,
            f"tag `{shown}` is not allowed; hookrun reads plain YAML only "
            "(strings, numbers, booleans, null, lists and mappings)",
        )
        return False

    def scalar(self, node: ScalarNode, loc: Loc) -> Any:
        tag = node.tag
        if tag in _TEXT_TAGS:
            return node.value
        construct = {
            _INT: _core_int,
            _FLOAT: _core_float,
            _BOOL: _core_bool,
            _NULL: self.constructor.construct_yaml_null,
        }.get(tag)
        if construct is None:
            self.tag_ok(node, _STR, loc)
            return None
        try:
            return construct(node)
        except (ValueError, KeyError, TypeError):
            self.error(node, loc, f"{short_repr(node.value)} cannot be read as {_SCALAR_KIND[tag]}")
            return None

    def key_of(self, node: Node, loc: Loc) -> str | None:
        """The key's text, or None (with an issue) when it is not a string."""
        if not isinstance(node, ScalarNode):
            self.error(node, loc, "a key must be a plain string, not a list or mapping")
            return None
        if node.tag == _NULL:
            self.error(node, loc, "a key is empty (null); write a name before the `:`")
            return None
        if node.tag in (_INT, _FLOAT, _BOOL):
            kind = _SCALAR_KIND[node.tag]
            message = f'key `{node.value}` reads as {kind}; keys must be strings (quote it: "{node.value}")'
            self.error(node, loc, message)
            return None
        if node.tag not in _TEXT_TAGS:
            self.tag_ok(node, _STR, loc)
            return None
        return node.value

    def mapping(self, node: MappingNode, loc: Loc) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        explicit: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag == _MERGE:
                merged = {**self.merge_sources(value_node, loc), **merged}
                continue
            key = self.key_of(key_node, loc)
            if key is None:
                continue
            child = (*loc, key)
            if key in first_line:
                self.error(
                    key_node,
                    child,
                    f"duplicate key `{key}` (first given on line {first_line[key]}); "
                    "YAML would silently keep only the last one — remove one of them",
                )
                continue
            first_line[key] = key_node.start_mark.line + 1
            self.record(child, key_node, value_node)
            explicit[key] = self.convert(value_node, child)
        return {**merged, **explicit}

    def merge_sources(self, node: Node, loc: Loc) -> dict[str, Any]:
        """Keys merged with ``<<: *anchor`` (or a list of anchors; earlier ones win)."""
        sources = node.value if isinstance(node, SequenceNode) else [node]
        result: dict[str, Any] = {}
        for source in sources:
            if not isinstance(source, MappingNode):
                self.error(source, loc, "`<<` merges mappings only; give a mapping or a list of mappings")
                continue
            value = self.convert(source, loc)
            if isinstance(value, dict):
                result = {**value, **result}
        return result


class _TooBig(Exception):
    def __init__(self, node: Node) -> None:
        self.node = node


class _TooDeep(Exception):
    def __init__(self, node: Node, loc: Loc) -> None:
        self.node = node
        self.loc = loc


class _CoreSchemaLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema plain scalars (the JSON Schema's types).

    PyYAML resolves plain scalars by YAML 1.1: ``yes``/``on``/``off`` are booleans, ``1:20`` is
    the sexagesimal 80, ``010`` is octal 8, ``1_000`` is 1000. The YAML 1.2 core schema, which
    this loader follows, reads those as strings (``010`` as decimal 10): booleans are only
    ``true``/``false`` (``True``, ``TRUE``), null only ``null``/``~``/empty, integers decimal,
    ``0o`` octal or ``0x`` hexadecimal, and floats as in JSON plus ``.inf``/``.nan``. Merge keys
    (``<<``) are still read.
    """

    yaml_implicit_resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}  # none of YAML 1.1's


_CORE_SCALARS: tuple[tuple[str, str, str | list[str]], ...] = (
    (_BOOL, r"(?:true|True|TRUE|false|False|FALSE)", "tTfF"),
    (_NULL, r"(?:~|null|Null|NULL|)", ["~", "n", "N", ""]),
    (_INT, r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)", "-+0123456789"),
    (
        _FLOAT,
        r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))",
        "-+0123456789.",
    ),
)
_CORE_PATTERN = {tag: re.compile(rf"^{pattern}\Z") for tag, pattern, _ in _CORE_SCALARS}
for _tag, _pattern, _first in _CORE_SCALARS:
    _CoreSchemaLoader.add_implicit_resolver(_tag, _CORE_PATTERN[_tag], list(_first))
_CoreSchemaLoader.add_implicit_resolver(_MERGE, re.compile(r"^<<\Z"), ["<"])


class QuotingDumper(yaml.SafeDumper):
    """PyYAML's safe dumper that also quotes strings YAML 1.2 would read otherwise (``1e3``, ``0o17``).

    Its resolvers are YAML 1.1's and the core schema's together, so what it writes reads back the
    same with this loader, with ``yaml.safe_load`` and with any other YAML reader.
    """

    yaml_implicit_resolvers = {key: list(value) for key, value in yaml.SafeDumper.yaml_implicit_resolvers.items()}


for _tag, _pattern, _first in _CORE_SCALARS:
    QuotingDumper.add_implicit_resolver(_tag, _CORE_PATTERN[_tag], list(_first))


def _core_text(node: ScalarNode, tag: str) -> str:
    """The scalar's text when it is a core-schema ``tag`` value (explicitly tagged ones too), else ValueError."""
    if _CORE_PATTERN[tag].match(node.value) is None:
        raise ValueError(node.value)
    return node.value


def _core_int(node: ScalarNode) -> int:
    """A YAML 1.2 core-schema integer: decimal (leading zeros allowed), ``0o`` octal, ``0x`` hexadecimal."""
    text = _core_text(node, _INT)
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def _core_float(node: ScalarNode) -> float:
    """A YAML 1.2 core-schema float (``.inf``, ``-.inf``, ``.nan`` included; an integer too, under ``!!float``)."""
    if _CORE_PATTERN[_INT].match(node.value):
        return float(_core_int(node))
    text = _core_text(node, _FLOAT).lower()
    if text.lstrip("+-") in (".inf", ".nan"):
        return float(text.replace(".", ""))
    return float(text)


def _core_bool(node: ScalarNode) -> bool:
    """A YAML 1.2 core-schema boolean."""
    return _core_text(node, _BOOL).lower() == "true"


def compose_yaml(text: str, source: str, loc: Loc = ()) -> Node | None:
    """Compose one YAML document safely (YAML 1.2 core-schema scalars); raise ConfigError on a syntax error."""
    try:
        return yaml.compose(text, Loader=_CoreSchemaLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        if exc.context and exc.problem:
            context = exc.context
            started = exc.context_mark
            if started is not None and mark is not None and started.line != mark.line and source != OVERRIDE_FILE:
                context += f" (started on line {started.line + 1})"
            problem = f"{context}: {problem}"
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        if source == OVERRIDE_FILE:
            line = column = None
        raise ConfigError(
            [ConfigIssue(source, line, column, format_yaml_path(loc), f"YAML syntax error: {problem}")]
        ) from None
    except yaml.reader.ReaderError as exc:
        before = text[: exc.position]
        line, column = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        if source == OVERRIDE_FILE:
            line = column = None
        raise ConfigError(
            [
                ConfigIssue(
                    source,
                    line,
                    column,
                    format_yaml_path(loc),
                    f"unacceptable character #x{exc.character:04x} ({exc.reason}); remove it",
                )
            ]
        ) from None
    except yaml.YAMLError as exc:
        issue = ConfigIssue(source, None, None, format_yaml_path(loc), f"cannot read YAML: {exc}")
        raise ConfigError([issue]) from None
    except RecursionError:
        raise ConfigError(
            [
                ConfigIssue(
                    source,
                    None,
                    None,
                    format_yaml_path(loc),
                    f"the YAML is nested too deeply to read (hookrun allows {MAX_DEPTH} levels)",
                )
            ]
        ) from None


def to_data(node: Node, source: str, index: LocationIndex | None, loc: Loc = ()) -> Any:
    """Convert a node to plain data; raise ConfigError with every issue found."""
    builder = _Builder(source, index)
    try:
        data = builder.convert(node, loc)
    except _TooBig as exc:
        builder.error(
            exc.node if source != OVERRIDE_FILE else None,
            loc,
            f"the config holds more than {MAX_VALUES} values (after expanding aliases); "
            "a hookrun config is far smaller — check anchors (`&`) and aliases (`*`)",
        )
        data = None
    except (_TooDeep, RecursionError) as exc:
        where = exc if isinstance(exc, _TooDeep) else None
        builder.error(
            where.node if where is not None and source != OVERRIDE_FILE else None,
            loc,
            f"lists and mappings are nested more than {MAX_DEPTH} levels deep",
        )
        data = None
    if builder.issues:
        raise ConfigError(builder.issues)
    return data


def read_text(file: Path, source: str) -> str:
    """Read the config file as UTF-8 text; raise ConfigError naming the fix.

    Only a regular file is read: a FIFO, socket or device is refused at once (never waited on).
    """

    def fail(message: str, line: int | None = None) -> ConfigError:
        return ConfigError([ConfigIssue(source, line, None, "", message)])

    if not file.exists():
        raise fail(f"no such file; check the path (relative paths start from the current directory, {Path.cwd()})")
    if file.is_dir():
        raise fail("this is a directory; give the path of a YAML config file inside it")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (`validate` hung on one); then only a
        # regular file is read (a FIFO, socket or device could block or never end).
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else (
                    "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
                raise fail(f"this is {kind}, not a regular file; give the path of a YAML config file (to pass a "
                           "config through a pipe, write it to a file first)")
            raw = handle.read(MAX_FILE_BYTES + 1)
    except PermissionError:
        raise fail("cannot read the file: permission denied; check its permissions") from None
    except OSError as exc:
        raise fail(f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise fail(f"the file is larger than {MAX_FILE_BYTES // 1024} KiB; a hookrun config is a small YAML file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise fail(
            f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save it as UTF-8",
            line,
        ) from None
