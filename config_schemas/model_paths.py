"""Follow YAML paths through the config models: locate pydantic's errors, apply ``--set`` overrides.

Used by :func:`hookrun.config_schemas.loader.load_config` only when a config
fails validation or ``--set`` is given, so that loading a valid config does
not compile or import this code. Every function takes the root model (the
``RunConfig`` with its hook union); the hook types are read from its ``hooks``
field. Imports :mod:`.yaml_source`, never :mod:`.loader`. Never imports TensorFlow.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from hookrun.common.suggest import closest, did_you_mean
from hookrun.config_schemas import bounds
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.yaml_source import (
    OVERRIDE_FILE,
    ConfigError,
    ConfigIssue,
    Loc,
    LocationIndex,
    Override,
    compose_yaml,
    format_yaml_path,
    locate,
    short_repr,
    to_data,
)

# --------------------------------------------------------------------------- models at locations


def hook_models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The hook config models of a root config model, by ``type``: the members of its ``hooks`` item union."""
    field = root.model_fields.get("hooks")
    if field is None:
        return {}
    return _union_models(_element_annotation(field.annotation))


def _strip(annotation: Any) -> Any:
    """Remove ``Annotated`` and ``Optional`` wrappers."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _union_models(annotation: Any) -> dict[str, type[BaseModel]]:
    """Members of a union of models discriminated on ``type``, by tag ({} when not one)."""
    annotation = _strip(annotation)
    if typing.get_origin(annotation) not in (Union, types.UnionType):
        return {}
    members = typing.get_args(annotation)
    if not all(_is_model(m) for m in members):
        return {}
    tags: dict[str, type[BaseModel]] = {}
    for member in members:
        info = member.model_fields.get("type")
        if info is None:
            return {}
        for tag in typing.get_args(info.annotation):
            tags[tag] = member
    return tags


def _model_of(annotation: Any, value: Any) -> type[BaseModel] | None:
    """The model class for a value of this annotation (choosing a hook model by ``type``).

    A mapping given to a union of one model and scalars (``data.columns``' ``"float" | TensorFeature``) is that
    model's.
    """
    annotation = _strip(annotation)
    if _is_model(annotation):
        return annotation
    tags = _union_models(annotation)
    if tags and isinstance(value, dict):
        tag = value.get("type")
        if isinstance(tag, str):
            return tags.get(tag)
    if not tags and isinstance(value, dict) and typing.get_origin(annotation) in (Union, types.UnionType):
        models = [member for member in typing.get_args(annotation) if _is_model(_strip(member))]
        if len(models) == 1:
            return _strip(models[0])
    return None


def _field_key(model: type[BaseModel], key: str) -> str | None:
    """The field name for a key given by name or alias, or None."""
    if key in model.model_fields:
        return key
    for name, info in model.model_fields.items():
        if info.alias == key:
            return name
    return None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _element_annotation(annotation: Any) -> Any:
    """The annotation of a list item or mapping value (None when unknown)."""
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is list and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _hook_tag(model: type[BaseModel] | None) -> str | None:
    """The hook type of a hook config model (its one ``type`` literal), None for any other model."""
    if model is None or not issubclass(model, HookConfig):
        return None
    args = typing.get_args(model.model_fields["type"].annotation)
    return args[0] if len(args) == 1 and isinstance(args[0], str) else None


def _describe(model: type[BaseModel] | None, loc: Loc) -> str:
    """``for a `x` hook`` / ``in `data``` / ``at the top level``."""
    tag = _hook_tag(model)
    if tag is not None:
        return f"for a `{tag}` hook"
    if not loc:
        return "at the top level"
    return f"in `{format_yaml_path(loc)}`"


@dataclass
class _Resolved:
    """A pydantic error location turned into a YAML path, with context."""

    path: Loc
    parent_model: type[BaseModel] | None
    union_label: bool


def _resolve_loc(raw: Sequence[str | int], data: Any, root: type[BaseModel]) -> _Resolved:
    """Strip union tags and member labels from a pydantic ``loc``, following the data."""
    annotation: Any = root
    value: Any = data
    path: list[str | int] = []
    parent_model: type[BaseModel] | None = None
    union_label = False
    for element in raw:
        if isinstance(element, int):
            path.append(element)
            value = value[element] if isinstance(value, list) and 0 <= element < len(value) else None
            annotation = _element_annotation(annotation)
            continue
        tags = _union_models(annotation) if annotation is not None else {}
        if element in tags:
            annotation = tags[element]
            continue
        model = _model_of(annotation, value) if annotation is not None else None
        if model is not None:
            name = _field_key(model, element)
            present = isinstance(value, dict) and element in value
            if name is not None:
                info = model.model_fields[name]
                key = element
                if not present and isinstance(value, dict):
                    other = info.alias if element == name else name
                    if other and other in value:
                        key = other
                parent_model = model
                path.append(key)
                value = value.get(key) if isinstance(value, dict) else None
                annotation = info.annotation
                continue
            if present:
                parent_model = model
                path.append(element)
                value = value[element]
                annotation = None
                continue
            union_label = True
            continue
        if isinstance(value, dict) and element in value:
            parent_model = None
            path.append(element)
            value = value[element]
            annotation = _element_annotation(annotation) if annotation is not None else None
            continue
        union_label = True
    return _Resolved(tuple(path), parent_model, union_label)


# --------------------------------------------------------------------------- pydantic errors -> issues

_SIMPLE_MESSAGES = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "finite_number": "must be a finite number",
}
_BOUND_MESSAGES = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
}


#: Words YAML 1.1 read as booleans; hookrun reads YAML 1.2, where they are text.
_YAML11_BOOLEANS = {"yes", "no", "on", "off", "y", "n"}


def _strict_hint(kind: str, bad: Any) -> str:
    """Why a value of the wrong type is not converted (values are strict), and the fix."""
    if isinstance(bad, bool):
        return "; true and false are not numbers"
    if not isinstance(bad, str):
        return ""
    text = bad.strip()
    if kind == "bool_type":
        if text.lower() in _YAML11_BOOLEANS | {"true", "false"}:
            return "; hookrun reads YAML 1.2, where only true and false (unquoted) are booleans"
        return ""
    try:
        float(text)
    except ValueError:
        if ":" in text and all(part.strip().isdigit() for part in text.split(":")):
            return "; hookrun reads YAML 1.2, where `1:20` is text, not the sexagesimal number 80"
        return ""
    return "; it is quoted, so it is text: remove the quotes"


#: Why an upper bound is what it is (see ``config_schemas/bounds.py``).
_BOUND_REASONS = {
    ("le", bounds.INT64_MAX): ", the largest int64 (TensorFlow counts steps in int64)",
    ("le", bounds.INT32_MAX): ", the largest int32",
    ("le", bounds.MAX_THREADS): " (each thread is started)",
    ("le", bounds.MAX_SECONDS): " seconds (about 31 years)",
    ("le", bounds.MAX_SEED): ", the largest 32-bit seed",
}


def _value_message(error: dict[str, Any]) -> tuple[str, str, str]:
    """What is wrong with a value: (message, `` (got ...)`` suffix, suggestion suffix)."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    bad = error.get("input")
    hint = ""
    if kind in _SIMPLE_MESSAGES:
        message = _SIMPLE_MESSAGES[kind]
        if kind == "string_type" and isinstance(bad, int | float | bool):
            reads_as = "a boolean" if isinstance(bad, bool) else "a number"
            hint = f"; YAML reads this value as {reads_as}, quote it to make it a string"
        elif kind in ("int_type", "float_type", "bool_type"):
            hint = _strict_hint(kind, bad)
    elif kind in _BOUND_MESSAGES and _BOUND_MESSAGES[kind][0] in ctx:
        bound, template = _BOUND_MESSAGES[kind]
        message = template.format(ctx[bound]) + _BOUND_REASONS.get((bound, ctx[bound]), "")
    elif kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        message = "must be one of " + ", ".join(f"`{a}`" for a in allowed) if allowed else str(error["msg"])
        if isinstance(bad, str):
            hint = did_you_mean(bad, allowed)
    elif kind == "string_pattern_mismatch":
        message = f"does not match the pattern {ctx.get('pattern', '')!s}"
    else:
        message = str(error["msg"])
        message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    got = ""
    if not isinstance(bad, dict) and not (isinstance(bad, str) and repr(bad) in message):
        got = f" (got {short_repr(bad)})"
    return message, got, hint


@dataclass
class _Pending:
    """One located error before formatting; union alternatives at one path are merged."""

    path: Loc
    at_value: bool | None
    messages: list[str]
    got: str = ""
    hint: str = ""

    def text(self) -> str:
        first, *rest = dict.fromkeys(self.messages)
        if first.startswith("must be "):
            rest = [m.removeprefix("must be ") for m in rest]
        return " or ".join([first, *rest]) + self.got + self.hint


def _error_to_pending(
    error: dict[str, Any], resolved: _Resolved, data: dict[str, Any], root: type[BaseModel]
) -> _Pending:
    """Describe one pydantic error at its YAML path."""
    hooks = hook_models(root)
    path = resolved.path
    kind = error["type"]
    model = resolved.parent_model
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else ""
        allowed = _allowed_keys(model) if model is not None else []
        message = f"unknown key `{key}` {_describe(model, path[:-1])}"
        hint = ""
        if model is not None:
            message += f" (allowed: {', '.join(allowed)})"
            candidates = allowed + [n for n in model.model_fields if n not in allowed]
            suggestion = closest(key, candidates)
            if suggestion:
                name = _field_key(model, suggestion[0]) or suggestion[0]
                hint = f"; did you mean `{model.model_fields[name].alias or name}`?"
        return _Pending(path, False, [message], hint=hint)
    if kind == "union_tag_invalid":
        known = list(hooks)
        tag = str((error.get("ctx") or {}).get("tag", ""))
        item = error.get("input")
        if isinstance(item, dict) and "type" in item:
            path = (*path, "type")
        message = f"unknown hook type `{tag}`; known types: {', '.join(known)}"
        return _Pending(path, True, [message], hint=did_you_mean(tag, known))
    if kind == "union_tag_not_found":
        return _Pending(path, False, [f"each hook needs `type: <one of {', '.join(hooks)}>`"])
    if kind == "missing":
        key = str(path[-1]) if path else ""
        message = f"missing required key `{key}`"
        if _hook_tag(model) is not None:
            message += f" {_describe(model, path[:-1])}"
        return _Pending(path[:-1], False, [message])
    message, got, hint = _value_message(error)
    inner = _inner_location(path, message, data)
    if inner is not None:
        inner_path, inner_message = inner
        bad = _value_at(inner_path, data)
        inner_got = ""
        if not isinstance(bad, dict | list) and not (isinstance(bad, str) and repr(bad) in inner_message):
            inner_got = f" (got {short_repr(bad)})"
        return _Pending(inner_path, None, [inner_message], inner_got)
    if isinstance(error.get("input"), dict):
        value = _value_at(path, data)
        item_model = _model_of(_annotation_at(path, data, root), value)
        if _hook_tag(item_model) is not None:
            message = f"`{value['type']}` hook: {message}"
        return _Pending(path, False, [message], got, hint)
    bad = error.get("input")
    if isinstance(bad, str) and message == "must be a mapping" and _union_models(_annotation_at(path, data, root)):
        example = bad if bad in hooks else "progress_bar"
        hint = f"; a hook is a mapping: write `- type: {example}`"
    return _Pending(path, True, [message], got, hint)


_INNER_PREFIX = re.compile(r"^([A-Za-z_]\w*(?:\.\w+)*): (.+)$", re.DOTALL)


def _inner_location(path: Loc, message: str, data: Any) -> tuple[Loc, str] | None:
    """Relocate a model-level message ``"params.hidden_units.0: ..."`` to the value it names.

    A model validator can only fail at its model's location; by convention it
    may start its message with a dotted path below that model. The path is
    followed when its first key is present in the data at ``path``.
    """
    match = _INNER_PREFIX.match(message)
    if match is None:
        return None
    container = _value_at(path, data)
    parts: list[str | int] = [int(p) if p.isdigit() else p for p in match.group(1).split(".")]
    if not isinstance(container, dict) or parts[0] not in container:
        return None
    inner = (*path, *parts)
    while len(inner) > len(path) + 1 and _value_at(inner, data) is None:
        inner = inner[:-1]
    return inner, match.group(2)


def validation_issues(
    exc: ValidationError,
    data: dict[str, Any],
    source: str,
    index: LocationIndex,
    overrides: Sequence[Override],
    root: type[BaseModel],
) -> list[ConfigIssue]:
    """Turn every pydantic error of validating ``data`` with the model ``root`` into a located issue."""
    pending: list[_Pending] = []
    alternatives: dict[Loc, _Pending] = {}
    errors = [(error, _resolve_loc(error["loc"], data, root)) for error in exc.errors(include_url=False)]
    for error, resolved in errors:
        if _scalar_branch_of_a_mapping(error, resolved, errors):
            continue
        item = _error_to_pending(error, resolved, data, root)
        if resolved.union_label:
            previous = alternatives.get(item.path)
            if previous is not None:
                previous.messages.extend(item.messages)
                previous.hint = previous.hint or item.hint
                continue
            alternatives[item.path] = item
        pending.append(item)
    return [locate(source, index, overrides, p.path, p.text(), at_value=p.at_value) for p in pending]


def _scalar_branch_of_a_mapping(
    error: dict[str, Any], resolved: _Resolved, errors: list[tuple[dict[str, Any], _Resolved]]
) -> bool:
    """Whether ``error`` is a union's scalar alternative refusing a mapping that its mapping alternative explains.

    ``data.columns.image: {type: float, shape: [-1]}`` fails both alternatives of ``"float" | TensorFeature``:
    the literal's ``must be one of `float`, `int`, `string``` says nothing to a user who wrote a mapping, the
    model's ``shape: every dimension ... at least 1`` (an error below the value) is the one to read.
    """
    if not resolved.union_label or not isinstance(error.get("input"), dict):
        return False
    if error["type"] != "literal_error" and not error["type"].endswith("_type"):
        return False
    depth = len(resolved.path)
    return any(
        other is not error and len(where.path) > depth and where.path[:depth] == resolved.path
        for other, where in errors
    )


def _value_at(loc: Loc, data: Any) -> Any:
    value = data
    for part in loc:
        if isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return None
    return value


def _annotation_at(loc: Loc, data: Any, root: type[BaseModel]) -> Any:
    """The annotation the models (from ``root`` down) give the value at ``loc`` (None when unknown)."""
    annotation: Any = root
    value = data
    for part in loc:
        if annotation is None:
            return None
        if isinstance(part, int):
            annotation = _element_annotation(annotation)
        else:
            model = _model_of(annotation, value)
            if model is not None:
                name = _field_key(model, part)
                annotation = model.model_fields[name].annotation if name is not None else None
            else:
                annotation = _element_annotation(annotation)
        value = _value_at((part,), value)
    return annotation


# --------------------------------------------------------------------------- overrides

_OVERRIDE_INDEX = re.compile(r"\[(\d+)\]")


def _override_error(text: str, path: Loc, message: str) -> ConfigError:
    return ConfigError([ConfigIssue(OVERRIDE_FILE, None, None, format_yaml_path(path), f"`{text}`: {message}")])


def _parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``PATH=VALUE`` into path parts and the YAML-parsed value."""
    if "=" not in text:
        raise ConfigError(
            [
                ConfigIssue(
                    OVERRIDE_FILE,
                    None,
                    None,
                    "",
                    f"`{text}`: an override needs the form PATH=VALUE, e.g. `data.batch_size=64` "
                    "or `hooks.N.KEY=VALUE` (the N-th hook's KEY, from 0)",
                )
            ]
        )
    raw_path, raw_value = text.split("=", 1)
    parts = _OVERRIDE_INDEX.sub(r".\1", raw_path.strip()).split(".")
    if any(not p.strip() for p in parts):
        message = f"the path `{raw_path}` has an empty part; write keys and indices like `a.b.0.c`"
        raise _override_error(text, (), message)
    try:
        node = compose_yaml(raw_value, OVERRIDE_FILE, ())
        value = None if node is None else to_data(node, OVERRIDE_FILE, None)
    except ConfigError as exc:
        issues = [ConfigIssue(OVERRIDE_FILE, None, None, i.path, f"`{text}`: {i.message}") for i in exc.issues]
        raise ConfigError(issues) from None
    return [p.strip() for p in parts], value


def apply_override(data: dict[str, Any], text: str, root: type[BaseModel]) -> Loc:
    """Apply one ``--set PATH=VALUE`` override to ``data`` in place, following the models from ``root``.

    Returns:
        The YAML path it set.

    Raises:
        ConfigError: the override is malformed or its path does not fit the config or the models.
    """
    parts, value = _parse_override(text)
    container: Any = data
    annotation: Any = root
    path: list[str | int] = []
    for position, part in enumerate(parts):
        last = position == len(parts) - 1
        here = tuple(path)
        if isinstance(container, list):
            if not part.lstrip("-").isdigit():
                raise _override_error(
                    text, here, f"`{format_yaml_path(here)}` is a list; use an index, not `{part}`"
                )
            index = int(part)
            if not 0 <= index < len(container):
                span = f"0 to {len(container) - 1}" if container else "none: the list is empty"
                raise _override_error(
                    text, (*here, index), f"index {index} is out of range for `{format_yaml_path(here)}` ({span})"
                )
            path.append(index)
            annotation = _element_annotation(annotation) if annotation is not None else None
            if last:
                container[index] = value
            else:
                if container[index] is None:
                    container[index] = {}
                container = container[index]
            continue
        if not isinstance(container, dict):
            shown = format_yaml_path(here) or "the config"
            raise _override_error(
                text, here, f"`{shown}` is {short_repr(container)}, not a mapping, so it has no key `{part}`"
            )
        model = _model_of(annotation, container) if annotation is not None else None
        if model is not None and _field_key(model, part) is None and part not in container:
            allowed = _allowed_keys(model)
            raise _override_error(
                text,
                (*here, part),
                f"unknown key `{part}` {_describe(model, here)} (allowed: {', '.join(allowed)})"
                + did_you_mean(part, allowed),
            )
        path.append(part)
        if model is not None:
            name = _field_key(model, part)
            annotation = model.model_fields[name].annotation if name is not None else None
        else:
            annotation = _element_annotation(annotation) if annotation is not None else None
        if last:
            container[part] = value
        else:
            if container.get(part) is None:
                is_list = annotation is not None and typing.get_origin(_strip(annotation)) is list
                container[part] = [] if is_list else {}
            container = container[part]
    return tuple(path)
