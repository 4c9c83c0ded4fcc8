"""What a person sees in an 80-column terminal, through the real ``hookrun`` command (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def hookrun(*args: str, columns: int = 80, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hookrun ARGS`` as a user does (``python -m hookrun.cli.app``), COLUMNS as given, no colour."""
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", *args], capture_output=True, text=True, timeout=300, env=env,
        cwd=cwd,
    )


# --- issue 13 item 13: --help placeholders, train's help paragraphs, --version ---


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["validate", "--help"], ["list-hooks", "--help"]])
def test_help_shows_no_type_placeholder_for_flags_and_a_readable_one_for_set(args):
    done = hookrun(*args)
    assert done.returncode == 0, done.stderr
    assert "<bool>" not in done.stdout
    assert "list[str]" not in done.stdout
    if args[0] in ("train", "validate"):
        assert "--set" in done.stdout and "PATH=VALUE" in done.stdout


def test_train_help_paragraphs_wrap_to_the_terminal():
    done = hookrun("train", "--help")
    lines = [line.strip() for line in done.stdout.splitlines()]
    # a docstring line break must not cut a sentence: no line ends after a lone option or mid-phrase
    assert "--local-cluster" not in lines
    assert not any(line.endswith("or") for line in lines if not line.startswith("│")), done.stdout
    # each prose line fills the 80 columns unless it ends its paragraph
    prose = done.stdout.split("Arguments")[0].splitlines()
    for line, after in zip(prose, prose[1:], strict=False):
        if line.strip() and after.strip():
            assert len(line.rstrip()) + len(after.split()[0]) + 1 > 78, (line, after)


def test_version_prints_the_package_version_without_tensorflow():
    code = (
        "import sys\nfrom hookrun.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('CODE', e.code)\n"
        "print('TF', any(m == 'tensorflow' or m.startswith('tensorflow.') for m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[0] == f"hookrun {version('hookrun')}", done.stdout + done.stderr
    assert "CODE 0" in done.stdout and "TF False" in done.stdout
