"""The hook catalogue from the config models (no TensorFlow): what ``list-hooks`` shows."""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticUndefined

from hookrun.config_schemas.hooks import HOOK_CONFIGS


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


def hook_catalogue() -> list[dict[str, Any]]:
    """Every hook type with its summary, source and parameters.

    Returns:
        One dict per hook: ``type``, ``summary``, ``mirrors``, ``params`` (a list of
        ``name``, ``type``, ``default``, ``required``, ``description``).
    """
    entries = []
    for model in HOOK_CONFIGS:
        schema = model.model_json_schema(by_alias=True)
        params = []
        for name, field in model.model_fields.items():
            if name == "type":
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
        entries.append(
            {
                "type": model.model_fields["type"].annotation.__args__[0],  # type: ignore[union-attr]
                "summary": model.summary,
                "mirrors": model.mirrors,
                "params": params,
            }
        )
    return entries
