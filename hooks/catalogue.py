"""The hook catalogue, derived from the registry (no TensorFlow): what ``list-hooks`` shows and ``docs/hooks.md`` holds.

``python -m hookrun.hooks.catalogue docs/hooks.md`` rewrites the generated page; a test fails when
the page in the repository is out of date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic_core import PydanticUndefined

from hookrun.hooks.registry import hook_configs, hook_type_of


def _type_label(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " | ".join(_type_label(s) for s in schema["anyOf"])
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_type_label(schema.get('items', {}))}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"dict[str, {_type_label(extra)}]" if isinstance(extra, dict) else "dict"
    label = {"integer": "int", "number": "float", "string": "str", "boolean": "bool", "null": "null"}.get(kind, kind)
    if "exclusiveMinimum" in schema:
        label += f" > {schema['exclusiveMinimum']}"
    elif "minimum" in schema:
        label += f" >= {schema['minimum']}"
    return label


def _params(model: Any, skip: tuple[str, ...] = ("type",)) -> list[dict[str, Any]]:
    """A pydantic model's fields as catalogue rows: ``name``, ``type``, ``default``, ``required``, ``description``."""
    schema = model.model_json_schema(by_alias=True)
    params = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        key = field.alias or name
        if field.default_factory is not None:
            default: Any = field.default_factory()  # type: ignore[call-arg]
        else:
            default = None if field.default is PydanticUndefined else field.default
        params.append(
            {
                "name": key,
                "type": _type_label(schema["properties"][key]),
                "default": default,
                "required": field.is_required(),
                "description": field.description or "",
            }
        )
    return params


def hook_catalogue() -> list[dict[str, Any]]:
    """Every hook type with its summary, source and parameters.

    Returns:
        One dict per hook: ``type``, ``summary``, ``mirrors``, ``params`` (a list of
        ``name``, ``type``, ``default``, ``required``, ``description``).
    """
    return [
        {"type": hook_type_of(model), "summary": model.summary, "mirrors": model.mirrors, "params": _params(model)}
        for model in hook_configs().values()
    ]


def builder_catalogue() -> list[dict[str, Any]]:
    """Every built-in graph builder (``graph.builder``) with its summary and ``graph.params``.

    Returns:
        One dict per builder: ``name``, ``summary`` (its params model's first docstring line, without
        the ``Params of `name`:`` lead), ``params`` (as in :func:`hook_catalogue`).
    """
    from hookrun.config_schemas.builders import BUILDER_PARAMS

    entries = []
    for name, model in BUILDER_PARAMS.items():
        summary = (model.__doc__ or "").strip().splitlines()[0]
        summary = summary.split(":", 1)[1].strip() if summary.startswith("Params of") else summary
        entries.append({"name": name, "summary": summary.replace("``", "`"), "params": _params(model, skip=())})
    return entries


def column_catalogue() -> list[dict[str, Any]]:
    """Every kind of a YAML ``feature_columns`` entry (``config_schemas/feature_columns.py``) with its arguments.

    Returns:
        One dict per kind: ``name`` (the YAML key), ``summary`` (the TensorFlow constructor it mirrors),
        ``tensorflow`` and ``r`` (R tfestimators' function), ``params`` (as in :func:`hook_catalogue`).
    """
    from hookrun.config_schemas.feature_columns import KINDS

    return [
        {
            "name": kind,
            "summary": (model.__doc__ or "").strip().splitlines()[0].replace("``", "`"),
            "tensorflow": tensorflow,
            "r": r_name,
            "params": _params(model, skip=()),
        }
        for kind, (model, tensorflow, r_name) in KINDS.items()
    ]


def _param_rows(params: list[dict[str, Any]]) -> list[str]:
    """One Markdown table row per parameter: name, type, default (or ``required``), description."""
    rows = []
    for param in params:
        default = "required" if param["required"] else f"`{json.dumps(param['default'])}`"
        cells = [f"`{param['name']}`", _cell(param["type"]), _cell(default), _cell(param["description"])]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _cell(text: Any) -> str:
    """A Markdown table cell: one line, ``|`` escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def catalogue_markdown() -> str:
    """The hook catalogue as a Markdown page (``docs/hooks.md``): one section per hook, a table of its parameters."""
    lines = [
        "# Hook catalogue",
        "",
        "<!-- Generated from the hook registry by `python -m hookrun.hooks.catalogue docs/hooks.md`; do not edit. -->",
        "",
        "Every `hooks:` entry has a `type` (below) and the parameters of its type. `hookrun list-hooks` shows",
        "the same catalogue in the terminal; `hookrun schema` gives it as JSON Schema.",
        "",
        "| type | what it does | mirrors |",
        "|---|---|---|",
    ]
    entries = hook_catalogue()
    for entry in entries:
        kind = entry["type"]
        lines.append(f"| [`{kind}`](#{kind}) | {_cell(entry['summary'])} | {_cell(entry['mirrors'])} |")
    for entry in entries:
        lines += ["", f"## {entry['type']}", "", _cell(entry["summary"]), ""]
        lines += [f"Mirrors: {_cell(entry['mirrors'])}.", ""]
        lines += ["| parameter | type | default | description |", "|---|---|---|---|"]
        lines += _param_rows(entry["params"])
    lines += [
        "",
        "# Built-in graph builders",
        "",
        "`graph.builder` names one of these (or `module:function`, your own); `graph.params` takes its",
        "parameters. `hookrun list-hooks` lists them after the hooks; `hookrun list-hooks NAME` shows one.",
    ]
    for builder in builder_catalogue():
        lines += ["", f"## {builder['name']}", "", _cell(builder["summary"]), ""]
        lines += ["| parameter | type | default | description |", "|---|---|---|---|"]
        lines += _param_rows(builder["params"])
    lines += [
        "",
        "# Feature columns",
        "",
        "The `dnn_linear_combined_*` builders take `linear_feature_columns` and `dnn_feature_columns`: lists of",
        "entries, each with one kind key below (its value: the feature key, or the column it wraps) and that",
        "`tf.compat.v1.feature_column` constructor's arguments. R tfestimators' names map one to one.",
        "",
        "| kind | TensorFlow | R tfestimators |",
        "|---|---|---|",
    ]
    columns = column_catalogue()
    lines += [f"| [`{c['name']}`](#{c['name']}) | `{c['tensorflow']}` | `{c['r']}` |" for c in columns]
    for column in columns:
        lines += ["", f"## {column['name']}", "", _cell(column["summary"]), ""]
        lines += ["| parameter | type | default | description |", "|---|---|---|---|"]
        lines += _param_rows(column["params"])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write :func:`catalogue_markdown` to the file named in ``argv`` (default: print it); returns 0."""
    args = sys.argv[1:] if argv is None else argv
    text = catalogue_markdown()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
