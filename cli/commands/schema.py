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
    ``type``. Checks that need code (exclusive pairs, builder params, the data
    file) are left to ``hookrun validate``.

    Returns:
        dict[str, Any]: the schema, ``$schema``, ``$id`` and ``title`` first.
    """
    from hookrun.hooks.registry import run_config_model_with_hooks

    generated = run_config_model_with_hooks().model_json_schema(by_alias=True, mode="validation")
    generated.pop("title", None)
    return {"$schema": SCHEMA_DIALECT, "$id": SCHEMA_ID, "title": SCHEMA_TITLE, **generated}


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
