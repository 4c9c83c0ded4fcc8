"""runner/data/formats/: the format registry (issue 24): one module a format, found as hooks are."""

from __future__ import annotations

import pytest

from hookrun.common.errors import DataError
from hookrun.runner.data.formats import registry
from hookrun.runner.data.formats.base import FileFormat
from hookrun.runner.data.sources import resolve_files


def test_the_registry_finds_each_format_module_built_ins_first():
    found = registry.formats()
    assert list(found)[:3] == ["csv", "tfrecord", "jsonl"]
    assert all(isinstance(fmt, FileFormat) for fmt in found.values())
    assert registry.format_named("jsonl").extensions == (".jsonl", ".jsonl.gz")


def test_an_unknown_data_format_is_refused_with_the_known_ones(tmp_path):
    (tmp_path / "data.txt").write_text("a,y\n1,2\n")
    with pytest.raises(DataError, match=r"`data.format` is 'cvs', not a format hookrun reads \(csv, tfrecord, jsonl"
                       r".*\); did you mean `csv`\?") as caught:
        resolve_files("data.txt", tmp_path, "cvs")
    assert caught.value.loc == ("data", "format")
    assert resolve_files("data.txt", tmp_path, "csv").format == "csv"


def test_a_module_without_a_format_is_a_registry_error(write_module, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    name = write_module("not_a_format", "FORMAT = 'csv'\n")
    with pytest.raises(registry.FormatRegistryError, match=f"{name}: a format module defines FORMAT"):
        registry._format_of_module(name)


#: runner/data/'s modules in the order data flows through them (docs/architecture.md, "The data path"): what the
#: stages pass on; files (the formats, which files); sample and statistics; transform -> tf.data; the user's own
#: pipeline; the run's input put together.
DATA_ORDER = [
    "columns", "element", "tensor_serving", "formats", "sources", "reader", "preprocessing", "streaming", "prediction",
    "input_state", "input_fn", "source",
]


def test_data_flows_one_way_through_the_modules():
    """Each module of runner/data/ imports only earlier ones in DATA_ORDER (deferred imports too)."""
    from tests.test_import_graph import import_graph

    prefix = "hookrun.runner.data."

    def head(module: str) -> str:
        return module[len(prefix):].split(".")[0]

    graph = import_graph()
    modules = [m for m in graph if m.startswith(prefix)]
    assert {head(m) for m in modules} == set(DATA_ORDER)  # a new module takes its place in the order
    for module in modules:
        for target in graph[module]:
            if target.startswith(prefix) and head(target) != head(module):
                assert DATA_ORDER.index(head(target)) < DATA_ORDER.index(head(module)), f"{module} imports {target}"


def test_a_broken_plug_in_is_one_line_naming_its_entry_point(monkeypatch):
    from importlib import metadata

    from hookrun.common.errors import SetupError

    broken = metadata.EntryPoint(name="broken", value="no_such_format_module_24", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry.metadata, "entry_points", lambda group: [broken] if group == broken.group else [])
    registry.formats.cache_clear()
    try:
        with pytest.raises(SetupError, match=r"the data format plug-in 'broken' \(hookrun.data_formats entry point "
                           r"no_such_format_module_24\) cannot be used: ModuleNotFoundError: .*; fix or uninstall"):
            registry.formats()
    finally:
        monkeypatch.undo()
        registry.formats.cache_clear()
    assert "csv" in registry.formats()
