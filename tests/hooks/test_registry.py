"""The hook registry is found from the hooks' folders; everything else derives from it."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import hookrun.hooks
from hookrun.hooks import registry
from hookrun.hooks.catalogue import catalogue_markdown, hook_catalogue
from hookrun.runner.config import load_config

REPO = Path(__file__).resolve().parents[2]
HOOKS_DIR = Path(hookrun.hooks.__file__).parent

PROBE_CONFIG = '''
"""A hook added as one folder."""
from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.hook_base import HookConfig


class ProbeConfig(HookConfig):
    """Probe."""

    summary: ClassVar[str] = "A probe hook added by a test."
    mirrors: ClassVar[str] = "tf.compat.v1.train.SessionRunHook"

    type: Literal["probe_hook"] = Field(description="Hook type.")
    every: int = Field(default=3, description="A parameter (steps).")
'''
PROBE_IMPL = '''
import tensorflow as tf


def build(config, ctx):
    return tf.compat.v1.train.SessionRunHook()
'''


def _fresh_registry() -> None:
    registry.hook_configs.cache_clear()
    registry.run_config_model_with_hooks.cache_clear()


@pytest.fixture
def extra_hooks_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A second directory of ``hookrun.hooks`` (as a namespace portion would be), emptied caches."""
    extra = tmp_path / "more_hooks"
    extra.mkdir()
    monkeypatch.setattr(hookrun.hooks, "__path__", [*hookrun.hooks.__path__, str(extra)])
    _fresh_registry()
    yield extra
    for name in [m for m in sys.modules if m.startswith(("hookrun.hooks.probe_hook", "hookrun.hooks.bad"))]:
        del sys.modules[name]
    _fresh_registry()


def test_every_hook_folder_is_a_registered_hook_type() -> None:
    folders = sorted(p.name for p in HOOKS_DIR.iterdir() if (p / "__init__.py").exists())
    assert folders  # else the comparison below would pass on an empty registry (no count to keep in step by hand)
    assert sorted(registry.hook_configs()) == folders
    for name, model in registry.hook_configs().items():
        assert registry.hook_type_of(model) == name
        assert (HOOKS_DIR / name / "hook.py").exists()


def test_a_hook_is_one_folder_and_everything_else_follows(extra_hooks_dir: Path, tmp_path: Path) -> None:
    (extra_hooks_dir / "probe_hook").mkdir()
    (extra_hooks_dir / "probe_hook" / "__init__.py").write_text(PROBE_CONFIG)
    (extra_hooks_dir / "probe_hook" / "hook.py").write_text(PROBE_IMPL)
    assert "probe_hook" in registry.hook_configs()
    assert list(registry.hook_configs())[-1] == "custom"  # the default rank sorts before custom only
    assert any(entry["type"] == "probe_hook" for entry in hook_catalogue())
    assert "## probe_hook" in catalogue_markdown()
    schema = registry.run_config_model_with_hooks().model_json_schema(by_alias=True)
    assert "ProbeConfig" in schema["$defs"]
    config = tmp_path / "c.yaml"
    csv = tmp_path / "d.csv"
    csv.write_text("a,y\n1,2\n")
    config.write_text(
        f"name: t\ngraph: {{builder: linear_regressor}}\ndata: {{train: {csv}, label: y}}\n"
        "hooks:\n  - type: probe_hook\n    every: 5\n"
    )
    loaded = load_config(config)
    assert loaded.config.hooks[0].every == 5


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"__init__.py": PROBE_CONFIG.replace('"probe_hook"', '"other"')}, "must be the folder's name 'bad_hook'"),
        ({"__init__.py": '"""No config."""\n', "hook.py": PROBE_IMPL}, "exactly one HookConfig subclass, found 0"),
        ({"__init__.py": PROBE_CONFIG.replace('"probe_hook"', '"bad_hook"')}, "no hook.py"),
    ],
    ids=["type-not-folder-name", "no-config", "no-implementation"],
)
def test_a_malformed_hook_folder_is_a_registry_error(
    extra_hooks_dir: Path, files: dict[str, str], message: str
) -> None:
    (extra_hooks_dir / "bad_hook").mkdir()
    for name, text in files.items():
        (extra_hooks_dir / "bad_hook" / name).write_text(text)
    with pytest.raises(registry.RegistryError, match=message):
        registry.hook_configs()


def test_the_consistency_check_holds_under_python_O(tmp_path: Path) -> None:
    """No ``assert``: ``python -O`` strips asserts, the registry's checks must stay."""
    bad = tmp_path / "bad_hook"
    bad.mkdir()
    (bad / "__init__.py").write_text('"""No config."""\n')
    code = textwrap.dedent(
        f"""
        import hookrun.hooks
        hookrun.hooks.__path__.append({str(tmp_path)!r})
        from hookrun.hooks import registry
        try:
            registry.hook_configs()
        except registry.RegistryError as err:
            print("raised:", err)
        """
    )
    done = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "raised: hookrun.hooks.bad_hook: a hook folder defines exactly one HookConfig subclass" in done.stdout


def test_docs_hooks_md_is_generated_from_the_registry() -> None:
    page = REPO / "docs" / "hooks.md"
    assert page.read_text(encoding="utf-8") == catalogue_markdown(), (
        "docs/hooks.md is out of date: run `python -m hookrun.hooks.catalogue docs/hooks.md`"
    )


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("common", ("hookrun.config_schemas", "hookrun.hooks", "hookrun.runner", "hookrun.cli", "hookrun.estimator",
                    "tensorflow", "pydantic", "yaml")),
        ("config_schemas", ("hookrun.hooks", "hookrun.runner", "hookrun.cli", "tensorflow")),
        ("hooks", ("hookrun.runner", "hookrun.cli")),
        ("runner", ("hookrun.cli",)),
    ],
)
def test_dependencies_flow_one_way(package: str, forbidden: tuple[str, ...]) -> None:
    """cli -> runner -> hooks -> config_schemas -> common: no import (deferred ones included) goes the other way."""
    offenders = sorted(
        f"{path.relative_to(REPO)}: {name}"
        for path in (REPO / package).rglob("*.py")
        for name in _imported_modules(path)
        if name.startswith(forbidden)
    )
    assert offenders == []


def test_tensor_names_are_located_under_the_hook() -> None:
    """The one list of a hook's tensor names, used by the runner's check (issue 13, item 5)."""
    logging_tensor = registry.hook_configs()["logging_tensor"]
    hook = logging_tensor(type="logging_tensor", tensors={"l": "loss", "g": "global_step"}, every_n_iter=1)
    assert hook.tensor_names() == [(("tensors", "l"), "loss"), (("tensors", "g"), "global_step")]
    listed = logging_tensor(type="logging_tensor", tensors=["loss"], every_n_iter=1)
    assert listed.tensor_names() == [(("tensors", 0), "loss")]
