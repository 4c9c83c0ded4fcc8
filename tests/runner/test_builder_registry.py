"""Built-in builders are found from their folders (runner/graph/builders/<name>/builder.py) and params models."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookrun.config_schemas.builders import BUILDER_PARAMS, CLASSIFIERS
from hookrun.config_schemas.graph import BUILTIN_BUILDERS
from hookrun.runner.graph.builders import registry

FOLDER = Path(registry.__file__).parent


def test_every_folder_with_builder_py_is_a_builtin_and_nothing_else():
    folders = sorted(p.parent.name for p in FOLDER.glob("*/builder.py"))
    assert registry.builtin_names() == tuple(folders)
    assert sorted(BUILTIN_BUILDERS) == folders
    assert "canned" not in folders  # shared code, no builder.py
    for name in folders:
        assert callable(registry.get_builder(name, Path(".")))
    assert CLASSIFIERS == {name for name in folders if name.endswith("classifier")}


@pytest.mark.parametrize("change", ["model without folder", "folder without model"])
def test_a_builder_missing_either_half_is_refused(monkeypatch, change):
    params = dict(BUILDER_PARAMS)
    if change == "model without folder":
        params["ghost_regressor"] = BUILDER_PARAMS["linear_regressor"]
    else:
        del params["dnn_regressor"]
    monkeypatch.setattr(registry, "BUILDER_PARAMS", params)
    registry.builtin_names.cache_clear()
    try:
        with pytest.raises(registry.RegistryError, match="ghost_regressor|dnn_regressor"):
            registry.builtin_names()
    finally:
        registry.builtin_names.cache_clear()
