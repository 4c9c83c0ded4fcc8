"""Tests of the Python API: ``hookrun.runner.trainer`` with a path or a loaded config."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from hookrun.config_schemas.loader import ConfigError
from hookrun.runner import train


def test_train_accepts_a_config_path(make_config, tmp_path: Path) -> None:
    loaded = make_config(hooks=[{"type": "history_saver", "every_n_step": 2}], data={"epochs": 1})
    console = Console(file=io.StringIO())
    result = train(str(loaded.path), run_dir=tmp_path / "run", console=console)
    rows = loaded.config.data  # batch size and rows come from the config and the CSV
    n_rows = sum(1 for _ in (loaded.base_dir / rows.train).open()) - 1
    expected_steps = -(-n_rows // rows.batch_size)
    assert result.final_global_step == expected_steps
    assert [r["step"] for r in result.history][-1] == expected_steps
    assert result.checkpoint_path is None  # no checkpoint_saver hook: nothing hidden was added


def test_train_path_with_bad_data_raises_config_error_and_writes_nothing(tmp_path: Path) -> None:
    config = {
        "name": "bad",
        "graph": {"builder": "linear_regressor"},
        "data": {"train": "missing.csv", "label": "y"},
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        train(path, run_dir=tmp_path / "run")
    assert "bad.yaml:" in str(info.value) and "missing.csv" in str(info.value)
    assert not (tmp_path / "run").exists()


def test_api_function_is_not_shadowed_by_the_module() -> None:
    import hookrun.runner
    import hookrun.runner.trainer  # noqa: F401 - importing the submodule must not replace the function

    assert callable(hookrun.runner.train)
    assert hookrun.runner.train.__module__ == "hookrun.runner"


def test_prepared_run_takes_keywords_only() -> None:
    from hookrun.runner.training.prepare import PreparedRun

    with pytest.raises(TypeError):
        PreparedRun(None, None, None, None, None, None, None, [], [])  # type: ignore[misc]


def test_runner_is_grouped_by_concern() -> None:
    """runner/ keeps the orchestration at its top; the rest in folders by concern (training/: the phases of train)."""
    from pathlib import Path

    import hookrun.runner

    root = Path(hookrun.runner.__file__).parent
    # live: the in-memory Python objects hookrun.estimator gives train()
    top = ["__init__", "config", "live", "preflight", "tf_env", "trainer"]
    assert sorted(p.stem for p in root.glob("*.py")) == top
    assert sorted(p.name for p in root.iterdir() if (p / "__init__.py").exists()) == [
        "cluster", "data", "graph", "roles", "run_dir", "session", "trained", "training"
    ]


def test_the_runner_knows_no_hook_by_name() -> None:
    """No hook type or hook class is named in runner/ code (strings and names; docstrings and comments aside)."""
    import ast
    import io
    import tokenize
    from pathlib import Path

    import hookrun.hooks
    import hookrun.runner
    from hookrun.hooks.registry import hook_configs

    names = set(hook_configs())
    hooks_root = Path(hookrun.hooks.__file__).parent
    for folder in hooks_root.iterdir():
        for path in folder.glob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names.update(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    names.discard("evaluation")  # also the graph's evaluation scope (EVAL_SCOPE), not the hook
    offenders = []
    for path in Path(hookrun.runner.__file__).parent.rglob("*.py"):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        previous = None
        for token in tokens:
            if token.type == tokenize.NAME and token.string in names:
                offenders.append(f"{path.name}:{token.start[0]} {token.string}")
            elif token.type == tokenize.STRING and previous not in (None, tokenize.NEWLINE, tokenize.INDENT):
                if token.string.strip("\"'rbfu") in names:
                    offenders.append(f"{path.name}:{token.start[0]} {token.string}")
            if token.type not in (tokenize.COMMENT, tokenize.NL):
                previous = token.type
    assert offenders == []
