"""The README is a front door (short; the rest in docs/), and every link in it and in docs/ resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: The docs/ pages the README must point to (issue 13 item 9).
TOPICS = ("config", "hooks", "data", "engine", "multi-machine", "architecture", "custom-hooks", "run-directory",
          "estimator-api", "builders", "devices", "migrating-from-estimator")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_a_front_door():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert len(re.findall(r"^#{1,6} ", text, flags=re.M)) <= 8
    for must in ("make demo", "make test", "## A first config", "## Commands", "## Where to read more"):
        assert must in text, must
    for topic in TOPICS:
        assert f"(docs/{topic}.md)" in text, topic
        assert (REPO / "docs" / f"{topic}.md").exists(), topic


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#{1,6} (.+)$", file.read_text(encoding="utf-8"), flags=re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, broken


def test_tf_env_does_not_claim_no_other_module_imports_tensorflow():
    source = (REPO / "runner" / "tf_env.py").read_text(encoding="utf-8")
    engine = (REPO / "runner" / "session" / "engine.py").read_text(encoding="utf-8")
    assert re.search(r"^import tensorflow", engine, flags=re.M)  # so the claim would be stale
    assert "Nothing else in hookrun imports TensorFlow at module level" not in source


# ----------------------------------------------------------------------------- the pages' code, run as written


def _code_blocks(page: Path, languages: tuple[str, ...]) -> list[str]:
    """The bodies of ``page``'s fenced code blocks in ``languages`` ("" for a block without one)."""
    text = page.read_text(encoding="utf-8")
    return [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S) if lang in languages]


def _hookrun_commands(page: Path) -> list[str]:
    """Every ``hookrun ...`` command line in ``page``'s shell blocks, comments removed."""
    commands = []
    for body in _code_blocks(page, ("", "sh", "shell", "bash", "console")):
        for line in body.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("hookrun "):
                commands.append(line)
    return commands


#: A placeholder in a usage line: CONFIG, RUN_DIR, PATH=V1,V2, [--flag], ``...``.
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]{2,}\b|\[|\.\.\.")


def _runnable(command: str, root: Path) -> bool:
    """A command without placeholders whose every path-like argument exists under ``root`` (a copy of the repo)."""
    if _PLACEHOLDER.search(command) or "--install-completion" in command:  # that one edits the shell's rc file
        return False
    paths = [a for a in command.split()[2:] if "/" in a or a.endswith((".yaml", ".csv"))]
    written = {"--output"}  # the argument after these is written, not read
    args = command.split()
    outputs = {args[i + 1] for i, a in enumerate(args[:-1]) if a in written}
    return all((root / p).exists() for p in paths if p not in outputs)


@pytest.fixture
def repo_copy(tmp_path, monkeypatch):
    """The bundled configs (and their data) under ``tmp_path``, the current directory, as a new clone's root."""
    import shutil

    shutil.copytree(REPO / "configs", tmp_path / "configs", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_hookrun_commands_run_as_written(repo_copy):
    """Every ``hookrun`` line in the README's and the docs' shell blocks that names only files a clone has runs,
    exit 0, in the order the page gives them (the README's validate, train, train again)."""
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    runner = CliRunner(env={"COLUMNS": "120"})
    ran = []
    for page in PAGES:
        for command in _hookrun_commands(page):
            if not _runnable(command, repo_copy):
                continue
            result = runner.invoke(app, command.split()[1:])
            assert result.exit_code == 0, (page.name, command, result.output)
            ran.append(command)
    readme = [c for c in _hookrun_commands(REPO / "README.md") if c in ran]
    assert readme[:3] == [
        "hookrun validate configs/mtcars_linear.yaml",
        "hookrun train configs/mtcars_linear.yaml",
        "hookrun train configs/mtcars_linear.yaml",
    ], readme
    assert "hookrun schema --output hookrun.schema.json" in ran


def test_the_readme_first_config_is_the_bundled_file():
    import yaml

    (block,) = [b for b in _code_blocks(REPO / "README.md", ("yaml",)) if "mtcars-linear" in b]
    assert yaml.safe_load(block) == yaml.safe_load((REPO / "configs" / "mtcars_linear.yaml").read_text())


def test_the_python_api_blocks_run_as_written(repo_copy, capsys):
    """docs/architecture.md's Python API blocks, run as a user would from the clone's root."""
    blocks = _code_blocks(REPO / "docs" / "architecture.md", ("python",))
    assert len(blocks) == 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/architecture.md", "exec"), namespace)  # noqa: S102 - the page's own code
    assert namespace["result"].evaluations[-1]["val_rmse"] > 0  # the dict config's run
    assert (repo_copy / "runs" / "api" / "preds.csv").exists()
    assert (repo_copy / "runs" / "api" / "export" / "1" / "saved_model.pb").exists()
    names = [row.name for row in namespace["table"].runs]
    assert names[0] == "api-dict", names  # the only run with val_rmse sorts first


def test_the_custom_hook_page_example_runs_as_written(repo_copy):
    """docs/custom-hooks.md's first hook (``my_hooks.py``) and its config lines, beside the README's config."""
    import yaml
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    page = REPO / "docs" / "custom-hooks.md"
    module = _code_blocks(page, ("python",))[0]
    assert module.startswith("# my_hooks.py, beside the config")
    (repo_copy / "configs" / "my_hooks.py").write_text(module, encoding="utf-8")
    hooks = yaml.safe_load(_code_blocks(page, ("yaml",))[0])["hooks"]
    config = yaml.safe_load((repo_copy / "configs" / "mtcars_linear.yaml").read_text(encoding="utf-8"))
    config["hooks"] = hooks
    path = repo_copy / "configs" / "threshold.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["train", str(path), "--run-dir", "runs/threshold"])
    assert result.exit_code == 0, result.output
    steps = int(re.search(r"trained (\d+) steps .*stop requested", result.stdout).group(1))
    assert 0 < steps < 200, result.stdout  # the hook stopped it before the 50 epochs' 200 steps


def test_the_trained_model_page_python_blocks_run_on_a_trained_run(repo_copy):
    """docs/trained-model.md's ``evaluate`` and serving blocks, on a run at ``runs/x`` (the page's name for one),
    its export at ``export/california`` and a ``test.csv``, as the page sets them up."""
    from typer.testing import CliRunner

    from hookrun.cli.app import app

    cli = CliRunner()
    trained = cli.invoke(app, ["train", "configs/california_housing_linear.yaml", "--run-dir", "runs/x",
                               "--set", "data.epochs=1"])
    assert trained.exit_code == 0, trained.output
    exported = cli.invoke(app, ["export", "runs/x", "--output", "export/california"])
    assert exported.exit_code == 0, exported.output
    rows = (repo_copy / "configs" / "data" / "california_housing.csv").read_text(encoding="utf-8").splitlines()
    (repo_copy / "test.csv").write_text("\n".join(rows[:201]) + "\n", encoding="utf-8")
    blocks = _code_blocks(REPO / "docs" / "trained-model.md", ("python",))
    # the tensor-feature run's serving lines (export/mnist) are run by tests/test_tensor_features.py's plain
    # TensorFlow process on a tensor-feature export (the same calls)
    blocks = [block for block in blocks if "export/mnist" not in block]
    assert len(blocks) == 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/trained-model.md", "exec"), namespace)  # noqa: S102 - the page's own code
    assert namespace["scores"].rows == 200 and namespace["scores"].metrics["val_loss"] > 0
    predictions = namespace["out"]["predictions"].numpy()
    assert predictions.shape == (1,) and 10_000 < float(predictions[0]) < 1_000_000  # dollars


#: The GPU switches (issue 28), each with the TensorFlow field or function it sets, as docs/devices.md names it.
GPU_SWITCHES = {
    "mixed_precision": "rewrite_options.auto_mixed_precision",
    "global_jit_level": "optimizer_options.global_jit_level",
    "allow_growth": "gpu_options.allow_growth",
    "per_process_gpu_memory_fraction": "gpu_options.per_process_gpu_memory_fraction",
}


def test_every_gpu_switch_is_documented_with_its_source_and_not_verified_on_gpu():
    from hookrun.config_schemas.session import SessionConfig

    page = (REPO / "docs" / "devices.md").read_text(encoding="utf-8")
    assert "## GPU" in page and "**Verified on GPU: no**" in page
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines() if line.startswith("| `")}
    config_md = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    for key, source in GPU_SWITCHES.items():
        field = SessionConfig.model_fields[key]
        assert source in rows[key] and rows[key].rstrip(" |").endswith("| no"), rows[key]
        assert "Verified on GPU: no" in (field.description or ""), key
        default = str(field.default).lower()
        assert re.search(rf"^  {key}: {re.escape(default)}\s", config_md, flags=re.M), (key, default)
        assert re.search(rf"^  {key}: {re.escape(default)}\s", page, flags=re.M), (key, default)
