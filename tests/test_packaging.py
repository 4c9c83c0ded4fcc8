"""One import name per module, and the wheel holds the package and nothing else (issue 13, item 7)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("cli", "common", "config_schemas", "estimator", "hooks", "runner")


def _source_modules() -> set[str]:
    """``hookrun/<folder>/.../<module>.py`` for every source file, as the wheel should hold it."""
    return {
        "hookrun/" + path.relative_to(REPO).as_posix()
        for folder in SOURCES
        for path in (REPO / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }


#: The tests here share the module-scoped wheel build (pip wheel): one pytest-xdist worker, so it builds once.
pytestmark = pytest.mark.xdist_group("test_packaging")


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The file list of a wheel built from a copy of the sources (the repository is left untouched)."""
    copy = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, copy / name)
    for folder in SOURCES:
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = copy / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out)]
        + ["."],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("hookrun-*.whl")
    return zipfile.ZipFile(wheel).namelist()


def test_the_wheel_holds_every_module_once_and_no_tests(wheel_files: list[str]) -> None:
    modules = {name for name in wheel_files if name.endswith(".py")}
    missing = _source_modules() - modules
    # setup.py finds the packages: a module left out sits in a folder without an __init__.py.
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert modules == _source_modules()
    top = {name.split("/")[0] for name in wheel_files}
    assert top == {"hookrun", "hookrun-0.1.0.dist-info"}
    tests = [n for n in wheel_files if n.rsplit("/", 1)[-1].startswith(("test_", "conftest")) or n.endswith("_test.py")]
    assert tests == []


def test_no_test_module_lives_beside_the_code() -> None:
    beside = [
        str(path.relative_to(REPO))
        for folder in SOURCES
        for path in (REPO / folder).rglob("*.py")
        if path.name.startswith("test_") or path.name.endswith("_test.py") or path.name == "conftest.py"
    ]
    assert beside == []
    assert not (REPO / "conftest.py").exists()


@pytest.mark.parametrize("folder", SOURCES)
def test_a_source_folder_does_not_import_under_its_bare_name(folder: str) -> None:
    """From the repository root, ``import runner`` would load a second copy of ``hookrun.runner``: it fails."""
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); import {folder}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode != 0
    assert f"ImportError: import hookrun.{folder}, not {folder}" in done.stderr


def test_every_loaded_hookrun_module_has_one_name() -> None:
    """In this test process, every module loaded from the source folders is named ``hookrun.…``."""
    import hookrun.cli.app  # noqa: F401
    import hookrun.runner.trainer  # noqa: F401

    roots = tuple(str(REPO / folder) for folder in SOURCES)
    twice = sorted(
        name
        for name, module in list(sys.modules.items())
        if str(getattr(module, "__file__", "") or "").startswith(roots) and not name.startswith("hookrun.")
    )
    assert twice == []
