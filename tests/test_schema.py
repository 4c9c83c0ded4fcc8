"""``hookrun schema``: a draft 2020-12 JSON Schema that accepts the shipped configs and rejects typos."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.config_schemas.loader import resolved_yaml
from hookrun.hooks.registry import hook_configs
from hookrun.runner.config import load_config

REPO = Path(__file__).resolve().parents[1]
CONFIG_FILES = sorted((REPO / "configs").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(schema)


def mtcars() -> dict[str, Any]:
    return yaml.safe_load((REPO / "configs" / "mtcars_linear.yaml").read_text(encoding="utf-8"))


def properties_of(node: Any, where: str = "#") -> Iterator[tuple[str, Any]]:
    """Every ``properties`` entry anywhere in the schema, as (JSON pointer, subschema)."""
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            yield f"{where}/properties/{name}", sub
        for key, value in node.items():
            yield from properties_of(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from properties_of(value, f"{where}/{index}")


def test_declares_draft_2020_12_and_is_a_valid_schema(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] and schema["title"]
    assert list(schema)[:3] == ["$schema", "$id", "title"]
    Draft202012Validator.check_schema(schema)


def test_every_property_has_a_description(schema: dict[str, Any]) -> None:
    found = list(properties_of(schema))
    assert len(found) > 50
    missing = [where for where, sub in found if not str(sub.get("description", "")).strip()]
    assert missing == []


def test_aliases_are_used(schema: dict[str, Any]) -> None:
    custom = schema["$defs"]["CustomHookConfig"]["properties"]
    assert "class" in custom and "class_" not in custom


@pytest.mark.parametrize("path", CONFIG_FILES, ids=[p.stem for p in CONFIG_FILES])
def test_shipped_configs_validate(path: Path, validator: Draft202012Validator) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [e.message for e in validator.iter_errors(data)]
    assert errors == []


@pytest.mark.parametrize("path", CONFIG_FILES, ids=[p.stem for p in CONFIG_FILES])
def test_resolved_configs_validate(path: Path, validator: Draft202012Validator) -> None:
    """What ``validate --print`` / the run directory's config.yaml holds also passes the schema."""
    data = yaml.safe_load(resolved_yaml(load_config(path)))
    assert [e.message for e in validator.iter_errors(data)] == []


def test_hook_items_are_discriminated_on_type(schema: dict[str, Any]) -> None:
    items = schema["properties"]["hooks"]["items"]
    assert items["discriminator"]["propertyName"] == "type"
    mapping = items["discriminator"]["mapping"]
    assert set(mapping) == set(hook_configs())
    assert sorted(branch["$ref"] for branch in items["oneOf"]) == sorted(mapping.values())
    for tag, ref in mapping.items():
        target = schema["$defs"][ref.rsplit("/", 1)[1]]
        assert target["properties"]["type"]["const"] == tag
        assert "type" in target["required"]
        assert target["additionalProperties"] is False


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda c: c["hooks"].append({"type": "chekpoint_saver", "save_steps": 5}), "unknown hook type"),
        (lambda c: c["hooks"].append({"save_steps": 5}), "hook without type"),
        (lambda c: c.__setitem__("hook", []), "unknown top-level key"),
        (lambda c: c["data"].__setitem__("batchsize", 8), "unknown key in data"),
        (lambda c: c["graph"]["optimizer"].__setitem__("lr", 0.1), "unknown key in optimizer"),
        (lambda c: c["hooks"][2].__setitem__("max_keep", 3), "unknown key in a hook"),
        (lambda c: c["data"].__setitem__("batch_size", "abc"), "string for an integer"),
        (lambda c: c["data"].__setitem__("batch_size", 0), "zero batch size"),
        (lambda c: c["data"].__setitem__("shuffle", "maybe"), "string for a boolean"),
        (lambda c: c.__setitem__("device", "tpu"), "unknown device"),
        (lambda c: c.__setitem__("device", "GPU"), "upper-case device"),
        (lambda c: c.__setitem__("name", "my run"), "name with a space"),
        (lambda c: c.pop("data"), "missing data"),
        (lambda c: c.__setitem__("graph", None), "null graph"),
        (lambda c: c.__setitem__("hooks", {"type": "progress_bar"}), "hooks not a list"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_schema_rejects(mutate: Any, why: str, validator: Draft202012Validator) -> None:
    config = copy.deepcopy(mtcars())
    assert validator.is_valid(config)
    mutate(config)
    assert not validator.is_valid(config), why


def test_output_file(tmp_path: Path, schema: dict[str, Any]) -> None:
    target = tmp_path / "hookrun.schema.json"
    result = CliRunner().invoke(app, ["schema", "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text(encoding="utf-8")) == schema


def test_output_file_in_missing_directory_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["schema", "--output", str(tmp_path / "no" / "such" / "dir.json")])
    assert result.exit_code == 2
    assert "cannot write" in result.output


def test_schema_command_does_not_import_tensorflow(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from hookrun.cli.app import app\n"
        "app(args=['schema', '--output', sys.argv[1]], prog_name='hookrun', standalone_mode=False)\n"
        "assert 'tensorflow' not in sys.modules, 'schema imported TensorFlow'\n"
    )
    target = tmp_path / "s.json"
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    Draft202012Validator.check_schema(json.loads(target.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    ("section", "key", "yaml_value"),
    [
        ("data", "batch_size", "true"),
        ("data", "batch_size", "'8'"),
        ("data", "batch_size", "8"),
        ("data", "epochs", "1:20"),
        ("data", "epochs", "010"),
        ("data", "shuffle", "yes"),
        ("data", "shuffle", "'true'"),
        ("data", "shuffle", "True"),
        ("data", "label_scale", "100"),
        ("data", "label_scale", "'100'"),
        ("data", "validation_split", "0.25"),
        ("session", "allow_soft_placement", "on"),
        ("session", "intra_op_parallelism_threads", "'2'"),
    ],
)
def test_the_loader_agrees_with_the_schema(
    tmp_path: Path, section: str, key: str, yaml_value: str, validator: Draft202012Validator
) -> None:
    """The same YAML value is accepted by both the loader and the JSON Schema, or by neither.

    (One difference JSON cannot express: JSON Schema's ``integer`` also matches ``8.0``, which the
    loader refuses for an integer field.)
    """
    from hookrun.config_schemas.loader import ConfigError
    from hookrun.config_schemas.yaml_source import compose_yaml, to_data

    text = (REPO / "configs" / "mtcars_linear.yaml").read_text(encoding="utf-8")
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    override = f"{section}.{key}={yaml_value}"
    try:
        load_config(path, [override])
        loader_accepts = True
    except ConfigError:
        loader_accepts = False
    data = to_data(compose_yaml(text, str(path)), str(path), None)  # the document as the loader reads YAML
    data.setdefault(section, {})[key] = to_data(compose_yaml(yaml_value, "--set"), "--set", None)
    assert validator.is_valid(data) == loader_accepts, (override, loader_accepts)
