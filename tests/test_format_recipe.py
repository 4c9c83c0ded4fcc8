"""docs/architecture.md's "How to add an input format", followed as written (issue 24).

The page's module and pyproject.toml are copied into a new package, which pip installs (into a folder of
the test's, not the venv: ``--target``, the one difference from the page's ``pip install .``); then
``hookrun validate`` and ``hookrun train`` read a ``.psv`` file through it, with no hookrun file edited.
Without the package on the path the same config is refused, listing the formats hookrun knows.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
HOOKRUN = Path(sys.executable).parent / "hookrun"


def _recipe_blocks() -> dict[str, str]:
    """The recipe section's fenced blocks by language (its ``python`` module and ``toml``), indentation removed."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## How to add an input format", 1)[1].split("\n## ", 1)[0]
    blocks = {}
    for indent, lang, body in re.findall(r"\n( *)```(\w+)\n(.*?)\n *```", section, flags=re.S):
        blocks[lang] = "\n".join(line[len(indent):] for line in body.splitlines()) + "\n"
    return blocks


def _hookrun(args: list[str], cwd: Path, site: Path | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONPATH", None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([str(HOOKRUN), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_recipe_adds_a_format_without_editing_hookrun(tmp_path: Path) -> None:
    blocks = _recipe_blocks()
    assert set(blocks) == {"python", "toml"}
    package = tmp_path / "hookrun-psv"
    (package / "hookrun_psv").mkdir(parents=True)
    (package / "hookrun_psv" / "__init__.py").write_text("", encoding="utf-8")
    (package / "hookrun_psv" / "psv.py").write_text(blocks["python"], encoding="utf-8")
    (package / "pyproject.toml").write_text(blocks["toml"], encoding="utf-8")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(package)],
        check=True, capture_output=True, timeout=300,
    )
    # y = 2 a - b + 1, rows on lines 2.., a blank line kept out
    lines = ["a|b|y", *(f"{i % 7}|{i % 3}|{2 * (i % 7) - (i % 3) + 1}" for i in range(40))]
    lines.insert(10, "")
    (tmp_path / "data.psv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = {
        "name": "psv",
        "graph": {"builder": "linear_regressor", "optimizer": {"name": "sgd", "learning_rate": 0.05}},
        "data": {"train": "data.psv", "label": "y", "batch_size": 8, "epochs": 2, "seed": 0, "validation_split": 0.25},
        "hooks": [{"type": "evaluation", "every_n_steps": 4}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")

    refused = _hookrun(["validate", "config.yaml"], tmp_path, None)
    assert refused.returncode != 0 and "unknown data format" in refused.stdout + refused.stderr
    checked = _hookrun(["validate", "config.yaml"], tmp_path, site)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    trained = _hookrun(["train", "config.yaml", "--run-dir", "run"], tmp_path, site)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    split = json.loads((tmp_path / "run" / "preprocessing.json").read_text(encoding="utf-8"))["split"]
    assert split["train_rows"] + split["validation_rows"] == 40  # every row, the blank line none
    assert summary["final_global_step"] == -(-split["train_rows"] * 2 // 8)
    assert [c["name"] for c in json.loads((tmp_path / "run" / "preprocessing.json").read_text())["columns"]] == [
        "a", "b"
    ]
