"""The run directory owns its files (issue 23): one registry, asked by validate, train, predict and export.

Each test failed on the code before the registry (``config_schemas/run_files.py``). Real CLI, real files;
the trainings run a few steps.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "200"})

STEPS = [{"type": "stop_at_step", "num_steps": 4}, {"type": "checkpoint_saver", "save_steps": 4}]


def _config(where: Path, hooks: list[dict], name: str = "c.yaml", **data) -> Path:
    config = base_config(hooks=hooks, data={"train": "data.csv", **data})
    path = where / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _exit_2(args: list[str], *words: str) -> list[str]:
    """Run the CLI; assert exit 2, no traceback, and every one of ``words`` in one stderr line; return the lines."""
    result = cli.invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert any(all(word in line for word in words) for line in lines), (args, lines)
    return lines


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# --- validate: collisions between writers, and between a hook path and the run's own --------------------------


@pytest.mark.parametrize(
    "hooks, words",
    [
        (  # two history_saver hooks on one file: one hook's rows were lost
            [{"type": "history_saver", "filename": "h.csv"}, {"type": "history_saver", "filename": "h.csv"}],
            ["c.yaml:", "hooks[1].filename", "hooks[0].filename"],
        ),
        (  # two history_saver hooks on the default file
            [{"type": "history_saver"}, {"type": "history_saver", "every_n_step": 2}],
            ["hooks[1].filename", "hooks[0].filename", "history.csv"],
        ),
        (  # the run's own files
            [{"type": "history_saver", "filename": "preprocessing.json"}],
            ["hooks[0].filename", "preprocessing.json", "the runner"],
        ),
        ([{"type": "history_saver", "filename": "config.yaml"}], ["hooks[0].filename", "config.yaml"]),
        ([{"type": "history_saver", "filename": "summary.json"}], ["hooks[0].filename", "summary.json"]),
        ([{"type": "history_saver", "filename": "hook_state-20.json"}], ["hooks[0].filename", "hook_state-<step>"]),
        ([{"type": "history_saver", "filename": "checkpoint"}], ["hooks[0].filename", "checkpoint_saver"]),
        ([{"type": "history_saver", "filename": ".hookrun.lock"}], ["hooks[0].filename", ".hookrun.lock"]),
        ([{"type": "history_saver", "filename": "best"}], ["hooks[0].filename", "best/"]),
        (  # max_to_keep deleted the best checkpoint: best.json said step 20, best/ held 180, 200, 210
            [
                {"type": "checkpoint_saver", "save_steps": 10, "checkpoint_dir": "best"},
                {"type": "evaluation", "every_n_steps": 4},
                {"type": "early_stopping", "keep_best": True},
            ],
            ["hooks[2].keep_best", "hooks[0].checkpoint_dir", "best"],
        ),
        (  # the same, with no early_stopping in this config: best/ is still keep_best's
            [{"type": "checkpoint_saver", "save_steps": 10, "checkpoint_dir": "./best/"}],
            ["hooks[0].checkpoint_dir", "best/", "early_stopping"],
        ),
        (
            [
                {"type": "evaluation", "every_n_steps": 4, "output_dir": "best"},
                {"type": "early_stopping", "keep_best": True},
            ],
            ["hooks[1].keep_best", "hooks[0].output_dir"],
        ),
        (  # one directory spelled two ways: checkpoint_saver's own rule compared the strings
            [
                {"type": "checkpoint_saver", "save_steps": 10},
                {"type": "checkpoint_saver", "save_steps": 20, "checkpoint_dir": "./"},
            ],
            ["hooks[1].checkpoint_dir", "hooks[0].checkpoint_dir"],
        ),
        (  # a hook file where another hook keeps its checkpoints
            [
                {"type": "checkpoint_saver", "save_steps": 10, "checkpoint_dir": "ckpt"},
                {"type": "history_saver", "filename": "ckpt"},
            ],
            ["hooks[1].filename", "hooks[0].checkpoint_dir"],
        ),
    ],
)
def test_validate_refuses_two_writers_of_one_path_naming_both_keys(tmp_path, linear_csv, hooks, words):
    extra = {"validation_split": 0.25} if any(h["type"] == "evaluation" for h in hooks) else {}
    config = _config(tmp_path, hooks, **extra)
    lines = _exit_2(["validate", str(config)], *words)
    assert len(lines) == 1, lines


@pytest.mark.parametrize(
    "hooks",
    [
        [{"type": "history_saver"}],
        [{"type": "history_saver", "filename": "h.csv"}, {"type": "history_saver", "filename": "h2.csv"}],
        [  # the defaults: checkpoints and events in the run directory, the evaluation's in eval/, best/
            {"type": "checkpoint_saver", "save_steps": 4},
            {"type": "summary_saver", "save_steps": 4},
            {"type": "step_counter", "every_n_steps": 4},
            {"type": "evaluation", "every_n_steps": 4},
            {"type": "early_stopping", "keep_best": True},
        ],
        [  # event writers share a directory, checkpoints sit beside event files
            {"type": "checkpoint_saver", "save_steps": 4, "checkpoint_dir": "eval"},
            {"type": "evaluation", "every_n_steps": 4},
            {"type": "summary_saver", "save_steps": 4, "output_dir": "eval"},
        ],
    ],
)
def test_paths_that_do_not_collide_pass_validate(tmp_path, linear_csv, hooks):
    config = _config(tmp_path, hooks, validation_split=0.25)
    result = cli.invoke(app, ["validate", str(config)])
    assert result.exit_code == 0, result.output


# --- hook file names stay in the run directory; validate and train accept the same names ----------------------


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("checkpoint_dir", "../elsewhere", "`..`"),
        ("checkpoint_dir", "/tmp/hookrun-ckpt", "absolute"),
        ("checkpoint_dir", "ckpt[1]", "glob"),
        ("checkpoint_basename", "../model.ckpt", "`..`"),
        ("checkpoint_basename", "sub/model.ckpt", "not a file name"),
        ("checkpoint_basename", "m[1]", "glob"),
    ],
)
def test_checkpoint_paths_outside_the_run_directory_or_globbed_are_refused(tmp_path, linear_csv, key, value, words):
    """``checkpoint_dir: ../x`` wrote checkpoints outside the run directory; ``[`` made TensorFlow glob them."""
    config = _config(tmp_path, [{"type": "stop_at_step", "num_steps": 4}, {"type": "checkpoint_saver",
                                                                           "save_steps": 4, key: value}])
    _exit_2(["validate", str(config)], f"hooks[1].{key}", words)


@pytest.mark.parametrize(
    "filename, words",
    [
        ("../x.csv", "`..`"),
        ("/tmp/hookrun-outside.csv", "absolute"),
        ("a/h.csv", "not a file name"),
        ("", "empty"),
    ],
)
def test_hook_file_names_outside_the_run_directory_are_refused_by_validate_and_train(
    tmp_path, linear_csv, filename, words
):
    config = _config(tmp_path, [*STEPS, {"type": "history_saver", "filename": filename}])
    _exit_2(["validate", str(config)], "hooks[2].filename", words)
    _exit_2(["train", str(config), "--run-dir", str(tmp_path / "run")], "hooks[2].filename", words)
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "x.csv").exists() and not Path("/tmp/hookrun-outside.csv").exists()


# --- --output never replaces what the run owns, whatever names it -----------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 4-step run with ``history_saver`` writing ``losses.csv``; never changed."""
    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train

    where = tmp_path_factory.mktemp("owned")
    write_csv(where / "data.csv", linear_rows(48, seed=3))
    config = _config(where, [*STEPS, {"type": "history_saver", "every_n_step": 2, "filename": "losses.csv"}])
    train(load_config(config), run_dir=where / "run")
    return where


@pytest.fixture
def run(trained, tmp_path, monkeypatch):
    """A copy of the run with what a longer run holds (``best/best.json``, ``hook_state-4.json``, ``eval/``)."""
    shutil.copytree(trained / "run", tmp_path / "run", symlinks=True)
    shutil.copy(trained / "data.csv", tmp_path / "data.csv")
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    (run / "best").mkdir()
    (run / "best" / "best.json").write_text('{"step": 4, "monitor": "val_loss", "value": 1.0}\n')
    (run / "hook_state-4.json").write_text("{}\n")
    (run / ".hookrun.lock").write_text("123\n")
    (run / "eval").mkdir()
    (run / "eval" / "events.out.tfevents.1.host").write_bytes(b"events")
    return run


def test_overwrite_never_replaces_a_run_owned_path_whatever_names_it(run, tmp_path):
    """``predict --output RUN/best/best.json --overwrite`` exited 0 and replaced ``best.json``; ``export --output
    RUN/eval`` deleted the evaluation's event files; ``RUN/hook_state-35.json``, ``RUN/.hookrun.lock`` too."""
    (tmp_path / "alias").symlink_to(run)  # another name for the run directory
    (tmp_path / "bestlink").symlink_to(run / "best")
    before = _snapshot(run)
    data = ["--data", "data.csv"]
    for output in (
        "run/best/best.json",
        "run/hook_state-4.json",
        "run/.hookrun.lock",
        "run/losses.csv",  # the run's history_saver filename
        "alias/best/best.json",
        "bestlink/best.json",
        "run/../run/hook_state-4.json",
        "run/best/new.csv",  # nothing may be added to best/ either
    ):
        _exit_2(["predict", str(run), *data, "--output", output, "--overwrite"], "a file of the run directory")
    for output in ("run/eval", "alias/eval", "run/best", "bestlink"):
        if output == "bestlink":  # a symlink at --output is replaced, not followed: this one is allowed
            continue
        _exit_2(["export", str(run), "--output", output, "--overwrite"], "a file of the run directory")
    assert _snapshot(run) == before
    assert (run / "best").is_dir() and (run / "eval").is_dir()


def test_output_never_replaces_another_runs_files(run, trained, tmp_path):
    """``predict RUN_A --output RUN_B/config.yaml --overwrite`` replaced run B's saved config."""
    other = tmp_path / "other"
    shutil.copytree(trained / "run", other, symlinks=True)
    before = _snapshot(other)
    for name in ("config.yaml", "preprocessing.json", "checkpoint"):
        _exit_2(["predict", str(run), "--data", "data.csv", "-o", f"other/{name}", "--overwrite"], "other")
    _exit_2(["export", str(run), "--output", "other/best", "--overwrite"], "a file of the run directory")
    assert _snapshot(other) == before


# --- --run-dir adopts only an empty directory, a new one or a hookrun run ---------------------------------------


def test_a_directory_that_is_not_a_run_is_refused_and_left_untouched(tmp_path, linear_csv):
    """``train --run-dir DIR`` replaced the user's config.yaml, history.csv, summary.json and deleted ``checkpoint``."""
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("config.yaml", "history.csv", "summary.json", "checkpoint", "\x1b[2Jnew\nline"):
        (mine / name).write_text(f"my own {name}\n")
    before = _snapshot(mine)
    config = _config(tmp_path, STEPS)
    lines = _exit_2(["train", str(config), "--run-dir", str(mine)], "not a hookrun run directory", "config.yaml")
    assert len(lines) == 1 and "\x1b" not in lines[0] and "\\x1b[2Jnew\\x0aline" in lines[0], lines
    assert _snapshot(mine) == before and sorted(os.listdir(mine)) == sorted(before)


def test_new_empty_and_hookrun_run_directories_are_adopted(tmp_path, linear_csv):
    config = _config(tmp_path, STEPS)
    empty = tmp_path / "empty"
    empty.mkdir()
    for run_dir in (tmp_path / "new" / "run", empty, empty):  # new, empty, then a resume of a hookrun run
        result = cli.invoke(app, ["train", str(config), "--run-dir", str(run_dir)])
        assert result.exit_code == 0, result.output
    (empty / "summary.json").unlink()  # killed before its summary: the saved config still marks it a run
    assert cli.invoke(app, ["train", str(config), "--run-dir", str(empty)]).exit_code == 0


def test_the_home_directory_is_refused_as_a_run_directory(tmp_path, linear_csv, monkeypatch):
    """``--run-dir /`` wrote about 20 files into ``/``; the home directory (here an empty one) was adopted too."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    config = _config(tmp_path, STEPS)
    _exit_2(["train", str(config), "--run-dir", str(home)], "not a place for a run directory")
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("root", ["/", "/tmp", "/usr", "/var/tmp"])
def test_system_roots_are_refused_before_anything_is_written(root):
    from hookrun.common.errors import SetupError
    from hookrun.runner.run_dir.directory import check_adoptable

    with pytest.raises(SetupError, match="not a place for a run directory"):
        check_adoptable(Path(root))


# --- paths are paths: refused before anything is written, one line, exit 2 --------------------------------------


def _one_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("name", ["g[1]", "a*b", "what?", "back\\slash", os.fsdecode(b"bad\xff-utf8")])
def test_run_directories_tensorflow_would_glob_or_cannot_name_are_refused_before_anything_is_written(
    tmp_path, linear_csv, name
):
    """``runs/g[1]`` trained, then resume, evaluate, predict and export exited 2 ("no checkpoint can be read"):
    TensorFlow globs checkpoint paths; invalid UTF-8 in the name was "internal error", exit 1."""
    config = _config(tmp_path, STEPS)
    run_dir = tmp_path / "runs" / name
    line = _one_line(cli.invoke(app, ["train", str(config), "--run-dir", str(run_dir)]))
    assert "rename it or choose another path" in line
    assert not (tmp_path / "runs").exists()


def test_a_run_directory_too_long_for_its_files_is_refused_before_training(tmp_path, linear_csv):
    """A run directory of 4,040-4,094 bytes started training, then failed writing its files (exit 1)."""
    config = _config(tmp_path, STEPS)
    run_dir = tmp_path / "long"
    while len(os.fsencode(str(run_dir))) < 4050:
        run_dir = run_dir / ("d" * min(200, 4050 - len(os.fsencode(str(run_dir))) - 1))
    line = _one_line(cli.invoke(app, ["train", str(config), "--run-dir", str(run_dir)]))
    assert "bytes" in line and "shorter path" in line
    assert not (tmp_path / "long").exists()


def test_a_run_directory_tensorflow_would_glob_is_refused_by_evaluate_predict_and_export(trained, tmp_path):
    """A run copied to ``runs/g[1]``: evaluate, predict and export said "no checkpoint"; now they name the ``[``."""
    run = tmp_path / "g[1]"
    shutil.copytree(trained / "run", run, symlinks=True)
    data = str(trained / "data.csv")
    for args in (
        ["evaluate", str(run), "--data", data],
        ["predict", str(run), "--data", data, "--output", str(tmp_path / "p.csv")],
        ["export", str(run), "--output", str(tmp_path / "model")],
    ):
        assert "glob pattern" in _one_line(cli.invoke(app, args))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g[1]"]


def test_empty_path_options_are_refused_not_read_as_the_current_directory(run, tmp_path):
    """``evaluate RUN_A --checkpoint ''`` (an unset variable) evaluated the current directory's run."""
    data = ["--data", "data.csv"]
    config = _config(tmp_path, STEPS, name="e.yaml")
    cases = [
        (["evaluate", str(run), *data, "--checkpoint", ""], "--checkpoint: an empty path"),
        (["predict", str(run), *data, "--checkpoint", "", "--output", "p.csv"], "--checkpoint: an empty path"),
        (["predict", str(run), *data, "--output", ""], "an empty path"),
        (["export", "", "--output", "m"], "an empty path"),
        (["export", str(run), "--output", ""], "an empty path"),
        (["train", str(config), "--run-dir", ""], "an empty path"),
    ]
    before = _snapshot(tmp_path)
    for args, words in cases:
        result = cli.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert words in " ".join(result.output.split()).replace("│", ""), (args, result.output)
    assert _snapshot(tmp_path) == before


def test_over_long_and_looping_paths_are_one_line_exit_2(run, tmp_path):
    """A 5,000-character --checkpoint, a 300-character --output name, an --output through a symlink loop:
    "internal error", exit 1."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    data = ["--data", "data.csv"]
    before = _snapshot(tmp_path)
    for args in (
        ["evaluate", str(run), *data, "--checkpoint", "c" * 5000],
        ["predict", str(run), *data, "--checkpoint", "c" * 5000, "--output", "p.csv"],
        ["predict", str(run), *data, "--output", "o" * 300 + ".csv"],
        ["export", str(run), "--output", "o" * 300],
        ["predict", str(run), *data, "--output", "loop/p.csv"],
        ["export", str(run), "--output", "loop/m"],
    ):
        line = _one_line(cli.invoke(app, args))
        assert "cannot use this path" in line and len(line) < 400, (args, line)
    assert _snapshot(tmp_path) == before


def test_every_registry_entry_is_documented_in_run_directory_md():
    """The registry and its page stay in step: each entry's name is in the ownership table of the docs."""
    from hookrun.config_schemas.run_files import RUN_ENTRIES

    page = (Path(__file__).resolve().parents[1] / "docs" / "run-directory.md").read_text(encoding="utf-8")
    section = page.split("## Who owns what: one registry", 1)[1].split("\n## ", 1)[0]
    missing = [e.name for e in RUN_ENTRIES if e.name != "temporary files" and f"`{e.name}`" not in section]
    assert not missing, missing


@pytest.mark.parametrize("name", ["m[1]", os.fsdecode(b"m\xff")])
def test_an_export_tensorflow_could_not_load_is_refused_before_it_is_written(run, tmp_path, name):
    """``export --output m[1]`` wrote a SavedModel whose variables never load (TensorFlow globs them);
    invalid UTF-8 in the name was "internal error", exit 1."""
    line = _one_line(cli.invoke(app, ["export", str(run), "--output", str(tmp_path / name)]))
    assert "--output" in line and "rename it or choose another path" in line
    assert not (tmp_path / name).exists()
