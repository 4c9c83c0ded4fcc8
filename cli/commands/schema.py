"""``hookrun schema``: the JSON Schema of a config, for editors and other tools (no TensorFlow import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

#: JSON Schema dialect of the output.
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Identifier of the schema (a URN: hookrun publishes no schema URL).
SCHEMA_ID = "urn:hookrun:schema:run-config"
SCHEMA_TITLE = "hookrun config"


def run_config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a config file, as ``hookrun schema`` prints it.

    Generated from :class:`RunConfig` (``mode="validation"``, keys by alias, e.g.
    ``class``); the ``hooks`` items are a ``oneOf`` with a ``discriminator`` on
    ``type``; a built-in builder's ``params`` follow its params model (``if``/``then``
    on ``builder``), its ``*feature_columns`` items the column kinds. Checks that need
    code (exclusive pairs, column names, the data file) are left to ``hookrun validate``.

    Returns:
        dict[str, Any]: the schema, ``$schema``, ``$id`` and ``title`` first.
    """
    from hookrun.hooks.registry import run_config_model_with_hooks

    generated = run_config_model_with_hooks().model_json_schema(by_alias=True, mode="validation")
    generated.pop("title", None)
    _add_builder_params(generated)
    return {"$schema": SCHEMA_DIALECT, "$id": SCHEMA_ID, "title": SCHEMA_TITLE, **generated}


def _add_builder_params(schema: dict[str, Any]) -> None:
    """Add ``graph.params`` per built-in builder and the ``*feature_columns`` items to ``schema`` (in place).

    ``if builder == name then params: its model``; each ``*feature_columns`` item is one of the column kinds
    (``config_schemas/feature_columns.py``).
    """
    from pydantic.json_schema import models_json_schema

    from hookrun.config_schemas.builders import BUILDER_PARAMS
    from hookrun.config_schemas.feature_columns import KINDS

    models = [(model, "validation") for model in BUILDER_PARAMS.values()]
    models += [(model, "validation") for model, _, _ in KINDS.values()]
    keys, defs = models_json_schema(models, by_alias=True, ref_template="#/$defs/{model}")
    definitions = schema.setdefault("$defs", {})
    for name, definition in defs.get("$defs", {}).items():
        definitions.setdefault(name, definition)
    columns = {"oneOf": [keys[(model, "validation")] for model, _, _ in KINDS.values()]}
    for model in BUILDER_PARAMS.values():
        ref = keys[(model, "validation")]["$ref"].rsplit("/", 1)[1]
        for name, field in definitions[ref].get("properties", {}).items():
            if name.endswith("feature_columns") and field.get("type") == "array":
                field["items"] = columns
    graph = definitions.get("GraphConfig")
    if graph is not None:
        graph["allOf"] = [
            {
                "if": {
                    "properties": {"builder": {"const": name, "description": f"The built-in builder {name}."}},
                    "required": ["builder"],
                },
                "then": {
                    "properties": {
                        "params": {**keys[(model, "validation")], "description": f"The params of {name}."}
                    }
                },
            }
            for name, model in BUILDER_PARAMS.items()
        ]


def schema_command(
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the schema to this file instead of stdout.", show_default=False),
    ] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of a config file, for editor completion and checks."""
    import json

    text = json.dumps(run_config_schema(), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        typer.echo(f"error: cannot write {output}: {err.strerror or err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {output}", err=True)
