"""Tests of hookrun.config_schemas.loader: YAML reading, locations, overrides, messages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from hookrun.config_schemas import loader as loader_module
from hookrun.config_schemas.loader import (
    ConfigError,
    ConfigIssue,
    LoadedConfig,
    format_yaml_path,
    resolved_yaml,
)
from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.runner.config import load_config

MINIMAL = """\
name: t
graph: {builder: linear_regressor}
data: {train: data.csv, label: y}
"""


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def errors_of(path: Path, overrides: tuple[str, ...] = ()) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return info.value


def only_issue(path: Path, overrides: tuple[str, ...] = ()) -> ConfigIssue:
    error = errors_of(path, overrides)
    assert len(error.issues) == 1, str(error)
    return error.issues[0]


# --------------------------------------------------------------------------- small public pieces


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        (("hooks", 2, "every_n_iter"), "hooks[2].every_n_iter"),
        (("data", "batch_size"), "data.batch_size"),
        (("device",), "device"),
        ((), ""),
        (("graph", "params", "a.b"), 'graph.params["a.b"]'),
        ((0, "x"), "[0].x"),
    ],
)
def test_format_yaml_path(loc: tuple[str | int, ...], expected: str) -> None:
    assert format_yaml_path(loc) == expected


def test_issue_format_with_and_without_parts() -> None:
    full = ConfigIssue("configs/a.yaml", 12, 5, "hooks[2].every_n_iter", "bad")
    assert full.format() == "configs/a.yaml:12:5: error: hooks[2].every_n_iter: bad"
    assert ConfigIssue("a.yaml", 3, None, "", "m", "warning").format() == "a.yaml:3: warning: m"
    assert ConfigIssue("--set", None, None, "device", "m").format() == "--set: error: device: m"


def test_config_error_sorts_issues_and_has_exit_code_2() -> None:
    later = ConfigIssue("a.yaml", 9, 1, "x", "later")
    earlier = ConfigIssue("a.yaml", 2, 7, "y", "earlier")
    same_line = ConfigIssue("a.yaml", 2, 3, "z", "same line, earlier column")
    no_line = ConfigIssue("--set", None, None, "w", "override")
    error = ConfigError([no_line, later, earlier, same_line])
    assert error.exit_code == 2
    assert [i.message for i in error.issues] == ["same line, earlier column", "earlier", "later", "override"]
    assert str(error).splitlines() == [i.format() for i in error.issues]


# --------------------------------------------------------------------------- valid configs


def test_minimal_config_loads_with_defaults_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, MINIMAL)
    monkeypatch.chdir(tmp_path)
    loaded = load_config("c.yaml")
    assert isinstance(loaded, LoadedConfig)
    assert loaded.config.name == "t"
    assert loaded.config.data.batch_size == 32
    assert loaded.config.hooks == []
    assert loaded.path == (tmp_path / "c.yaml").resolve()
    assert loaded.path.is_absolute()
    assert loaded.base_dir == tmp_path.resolve()


def test_where_points_at_values_keys_and_parents(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: t
        graph:
          builder: linear_regressor
        data: {train: data.csv, label: y}
        hooks:
          - type: checkpoint_saver
            save_steps: 10
        """,
    )
    loaded = load_config(path)
    assert loaded.where("data", "label") == (4, 32)  # the scalar value
    assert loaded.where("graph") == (2, 1)  # a block mapping: its key
    assert loaded.where("hooks", 0) == (6, 5)  # the list item
    assert loaded.where("hooks", 0, "save_steps") == (7, 17)
    # a default value has no node: nearest parent
    assert loaded.where("hooks", 0, "max_to_keep") == (6, 5)
    assert loaded.where("session", "run_dir") == (1, 1)


def test_issue_helper_fills_location(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    loaded = load_config(path)
    issue = loaded.issue(("data", "train"), "file not found", severity="warning")
    assert issue == ConfigIssue(str(path), 3, 15, "data.train", "file not found", "warning")


def test_resolved_yaml_round_trips(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: full-run.1
        graph:
          builder: dnn_regressor
          params: {hidden_units: [8, 4]}
          optimizer: {name: sgd, learning_rate: 0.5}
        data: {train: data.csv, label: y, features: [a, b], epochs: null, seed: 7}
        device: auto
        hooks:
          - type: stop_at_step
            last_step: 100
          - type: logging_tensor
            tensors: {loss: loss}
          - type: custom
            class: my_hooks:Hook
            args: {when: "2024-01-01", flag: "yes"}
        """,
    )
    loaded = load_config(path, ["data.batch_size=7"])
    text = resolved_yaml(loaded)
    assert text.splitlines()[0] == "name: full-run.1"
    assert "class: my_hooks:Hook" in text
    assert "batch_size: 7" in text
    assert "{" not in text  # block style
    keys = [line.split(":")[0] for line in text.splitlines() if line[:1] not in ("", " ", "-")]
    assert keys == ["name", "graph", "data", "device", "session", "hooks"]
    again = load_config(write(tmp_path, text, "resolved.yaml"))
    assert again.config == loaded.config
    assert again.config.hooks[2].args == {"when": "2024-01-01", "flag": "yes"}


def test_anchors_and_merge_keys_work(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: t
        graph: {builder: linear_regressor}
        data: {train: data.csv, label: y}
        hooks:
          - &ck {type: checkpoint_saver, save_steps: 10}
          - <<: *ck
            save_steps: 20
        """,
    )
    hooks = load_config(path).config.hooks
    assert [(h.type, h.save_steps) for h in hooks] == [("checkpoint_saver", 10), ("checkpoint_saver", 20)]


def test_bom_and_timestamps_are_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: 2024-01-01\n" + MINIMAL.split("\n", 1)[1].encode())
    assert load_config(path).config.name == "2024-01-01"


# --------------------------------------------------------------------------- file problems


def test_missing_file(tmp_path: Path) -> None:
    issue = only_issue(tmp_path / "nope.yaml")
    assert issue.file == str(tmp_path / "nope.yaml")
    assert issue.line is None
    assert "no such file" in issue.message


def test_directory(tmp_path: Path) -> None:
    issue = only_issue(tmp_path)
    assert "is a directory" in issue.message


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, MINIMAL)

    import os

    real_open = os.open

    def deny(file: object, *args: object, **kwargs: object) -> int:  # root reads a chmod 000 file
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    issue = only_issue(path)
    assert issue.file == str(path)
    assert "permission denied" in issue.message


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"name: t\n# caf\xe9\n")
    issue = only_issue(path)
    assert issue.format() == f"{path}:2: error: the file is not UTF-8 text (byte 0xe9 at offset 13); save it as UTF-8"


def test_too_large_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("# x\n" * (loader_module.MAX_FILE_BYTES // 4 + 1))
    assert "larger than 1024 KiB" in only_issue(path).message


@pytest.mark.parametrize("text", ["", "# only a comment\n\n", "~\n", "null\n"])
def test_empty_config(tmp_path: Path, text: str) -> None:
    issue = only_issue(write(tmp_path, text))
    assert issue.message == "the config is empty; it needs at least name, graph and data"


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, "# list\n- a\n- b\n"))
    assert (issue.line, issue.column) == (2, 1)
    assert "must be a mapping" in issue.message and "not a list" in issue.message


def test_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "name: t\ngraph:\n  builder: x\n   bad: 1\n")
    issue = only_issue(path)
    assert issue.format() == f"{path}:4:7: error: YAML syntax error: mapping values are not allowed here"


def test_two_documents_are_an_error(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + "---\nname: u\n"))
    assert issue.line == 4
    assert "single document" in issue.message


# --------------------------------------------------------------------------- safe YAML


def test_python_tags_are_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(
        tmp_path,
        MINIMAL
        + f"device: !!python/object/apply:os.system ['touch {marker}']\n"
        + "session: !!python/name:os.system\n",
    )
    issues = errors_of(path).issues
    assert [(i.line, i.path) for i in issues] == [(4, "device"), (5, "session")]
    assert "tag `!!python/object/apply:os.system` is not allowed" in issues[0].message
    assert "tag `!!python/name:os.system` is not allowed" in issues[1].message
    assert not marker.exists()


@pytest.mark.parametrize(("value", "shown"), [("!foo bar", "!foo"), ("!!binary aGVsbG8=", "!!binary")])
def test_non_standard_tags_are_refused(tmp_path: Path, value: str, shown: str) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + f"device: {value}\n"))
    assert (issue.line, issue.column) == (4, 9)
    assert f"tag `{shown}` is not allowed" in issue.message


def test_bad_explicit_scalar(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + "device: !!int abc\n"))
    assert issue.line == 4 and "cannot be read as an integer" in issue.message


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    issue = only_issue(write(tmp_path, "\n".join(lines) + "\n"))
    assert "more than 100000 values" in issue.message


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, "a: &x [1, *x]\n"))
    assert issue.line == 1 and issue.path == "a[1]"
    assert "recursive" in issue.message


def test_very_deep_nesting_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n"))
    assert "nested too deeply" in issue.message


def test_moderately_deep_nesting_hits_the_depth_limit(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, "a: " + "[" * 100 + "]" * 100 + "\n"))
    assert issue.line == 1
    assert "nested more than 64 levels" in issue.message


def test_huge_integer_is_an_error(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL.replace("label: y}", "label: y, batch_size: " + "9" * 5000 + "}")))
    assert issue.line == 3 and "cannot be read as an integer" in issue.message


# --------------------------------------------------------------------------- keys


def test_duplicate_keys_point_at_the_second(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: t
        graph:
          builder: linear_regressor
          params: {}
          builder: dnn_regressor
        data: {train: data.csv, label: y}
        """,
    )
    issue = only_issue(path)
    expected = f"{path}:5:3: error: graph.builder: duplicate key `builder` (first given on line 3)"
    assert issue.format().startswith(expected)


def test_duplicate_top_level_keys(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + "name: u\n"))
    assert (issue.line, issue.column) == (4, 1)
    assert "first given on line 1" in issue.message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("1: x", "key `1` reads as an integer"),
        ("~: x", "a key is empty (null)"),
        ("true: x", "key `true` reads as a boolean"),
        ("yes: x", "unknown key `yes`"),  # YAML 1.2: text, not a boolean
        ("? [a]\n: x", "a key must be a plain string"),
    ],
)
def test_non_string_keys(tmp_path: Path, line: str, expected: str) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + line + "\n"))
    assert issue.line == 4
    assert expected in issue.message


# --------------------------------------------------------------------------- validation messages

HOOKS_FILE = """\
name: t
graph: {builder: linear_regressor}
data: {train: data.csv, label: y}
hooks:
  - type: checkpoint_saver
    save_steps: 10
  - type: logging_tensor
    every_n_iters: 5
"""


def test_unknown_hook_key_exact_message(tmp_path: Path) -> None:
    path = write(tmp_path, HOOKS_FILE.replace("every_n_iters: 5", "tensors: [loss]\n    every_n_iters: 5"))
    issue = only_issue(path)
    assert issue.format() == (
        f"{path}:9:5: error: hooks[1].every_n_iters: unknown key `every_n_iters` for a `logging_tensor` hook "
        "(allowed: type, tensors, every_n_iter, every_n_secs, at_end, chief_only); did you mean `every_n_iter`?"
    )


def test_unknown_key_did_you_mean_uses_aliases(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "hooks:\n  - type: custom\n    clas: m:H\n")
    issue = only_issue(path)
    assert (issue.line, issue.column) == (6, 5)
    assert issue.message.endswith("did you mean `class`?")


def test_unknown_top_level_and_nested_keys(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("label: y}", "label: y, batch_sise: 3}") + "devise: cpu\n")
    issues = errors_of(path).issues
    assert [(i.line, i.column, i.path) for i in issues] == [(3, 35, "data.batch_sise"), (4, 1, "devise")]
    assert "unknown key `batch_sise` in `data`" in issues[0].message
    assert issues[0].message.endswith("did you mean `batch_size`?")
    assert "at the top level" in issues[1].message and issues[1].message.endswith("did you mean `device`?")


def test_unknown_hook_type_points_at_the_value(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "hooks:\n  - type: chekpoint_saver\n")
    issue = only_issue(path)
    assert (issue.line, issue.column, issue.path) == (5, 11, "hooks[0].type")
    assert "unknown hook type `chekpoint_saver`" in issue.message
    assert "stop_at_step, checkpoint_saver" in issue.message
    assert issue.message.endswith("did you mean `checkpoint_saver`?")


def test_hook_without_type(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "hooks:\n  - save_steps: 3\n")
    issue = only_issue(path)
    assert (issue.line, issue.column, issue.path) == (5, 5, "hooks[0]")
    assert issue.message.startswith("each hook needs `type: <one of stop_at_step, checkpoint_saver,")


def test_hook_that_is_not_a_mapping(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + "hooks:\n  - 5\n"))
    assert (issue.line, issue.path, issue.message) == (5, "hooks[0]", "must be a mapping (got 5)")


def test_missing_keys_point_at_the_parent(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        # a comment
        graph: {builder: linear_regressor}
        data:
          train: data.csv
        hooks:
          - type: global_step_waiter
        """,
    )
    issues = errors_of(path).issues
    assert [i.format() for i in issues] == [
        f"{path}:2:1: error: missing required key `name`",
        f"{path}:3:1: error: data: missing required key `label`",
        f"{path}:6:5: error: hooks[0]: missing required key `wait_until_step` for a `global_step_waiter` hook",
    ]


def test_value_errors_show_the_bad_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: t
        graph: {builder: linear_regressor}
        data:
          train: data.csv
          label: y
          batch_size: 0
          missing: dorp
        device: tpu
        """,
    )
    issues = errors_of(path).issues
    assert [i.format() for i in issues] == [
        f"{path}:6:15: error: data.batch_size: must be greater than 0 (got 0)",
        (
            f"{path}:7:12: error: data.missing: must be one of `error`, `drop`, `mean`, `median` or a mapping "
            "(got 'dorp'); did you mean `drop`?"
        ),
        f"{path}:8:9: error: device: device 'tpu' is not one of cpu, gpu, gpu:N (N = 0 to 999) or auto",
    ]
    assert all("Value error" not in i.message for i in issues)


def test_long_bad_values_are_truncated(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + "device: [" + ", ".join(["1"] * 100) + "]\n"))
    assert issue.path == "device"
    assert "must be a string" in issue.message
    got = issue.message.split("(got ", 1)[1]
    assert got.endswith("...)") and len(got) <= 61


def test_number_where_string_expected_suggests_quoting(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL.replace("name: t", "name: 5")))
    assert issue.line == 1
    assert issue.message.startswith("must be a string (got 5); YAML reads this value as a number, quote it")


def test_union_alternatives_are_merged(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL + "hooks:\n  - type: logging_tensor\n    tensors: loss\n"))
    assert (issue.line, issue.column, issue.path) == (6, 14, "hooks[0].tensors")
    assert issue.message == "must be a list or a mapping (got 'loss')"


def test_model_level_hook_error_points_at_the_item(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        MINIMAL
        + """\
hooks:
  - type: stop_at_step
    num_steps: 5
  - type: checkpoint_saver
    save_steps: 10
    save_secs: 5
""",
    )
    issue = only_issue(path)
    assert issue.format() == (
        f"{path}:7:5: error: hooks[1]: `checkpoint_saver` hook: "
        "set exactly one of `save_steps` or `save_secs`, not both"
    )


def test_several_errors_sorted_by_position(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: t
        hooks:
          - type: nan_tensor
            fail_on_nan: true
          - type: progress_bar
            total: -1
        graph: {builder: linear_regresor}
        data: {train: data.csv, label: y, shuffle: maybe}
        """,
    )
    issues = errors_of(path).issues
    assert [(i.line, i.path) for i in issues] == [
        (4, "hooks[0].fail_on_nan"),
        (6, "hooks[1].total"),
        (7, "graph.builder"),
        (8, "data.shuffle"),
    ]
    assert issues[0].message.endswith("did you mean `fail_on_nan_loss`?")
    assert issues[3].message == "must be true or false (got 'maybe')"


# --------------------------------------------------------------------------- overrides


def test_overrides_parse_yaml_values(tmp_path: Path) -> None:
    path = write(tmp_path, HOOKS_FILE.replace("every_n_iters: 5", "every_n_iter: 5"))
    loaded = load_config(
        path,
        [
            "data.batch_size=50",
            "data.shuffle=false",
            "data.features=[a, b]",
            "data.epochs=null",
            "hooks.1.every_n_iter=7",
            "hooks[0].save_steps=3",
            "device=gpu:0",
        ],
    )
    config = loaded.config
    assert (config.data.batch_size, config.data.shuffle, config.data.features) == (50, False, ["a", "b"])
    assert config.data.epochs is None
    assert config.hooks[1].every_n_iter == 7
    assert config.hooks[0].save_steps == 3
    assert config.device == "gpu:0"


def test_override_can_create_a_missing_mapping(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path, MINIMAL), ["session.run_dir=/tmp/x"])
    assert loaded.config.session.run_dir == "/tmp/x"
    assert loaded.issue(("session", "run_dir"), "m").file == "--set"


@pytest.mark.parametrize(
    ("override", "path", "message"),
    [
        ("device", "", "`device`: an override needs the form PATH=VALUE"),
        ("hooks.5.save_steps=1", "hooks[5]", "`hooks.5.save_steps=1`: index 5 is out of range for `hooks` (0 to 1)"),
        ("hooks.first=1", "hooks", "`hooks.first=1`: `hooks` is a list; use an index, not `first`"),
        ("data.label.x=1", "data.label", "`data.label.x=1`: `data.label` is 'y', not a mapping, so it has no key `x`"),
        ("a..b=1", "", "`a..b=1`: the path `a..b` has an empty part"),
        ("device=[1", "", "`device=[1`: YAML syntax error"),
        ("device=!!python/name:os.system", "", "`device=!!python/name:os.system`: tag `!!python/name:os.system`"),
    ],
)
def test_bad_overrides(tmp_path: Path, override: str, path: str, message: str) -> None:
    issue = only_issue(write(tmp_path, HOOKS_FILE), (override,))
    assert (issue.file, issue.line, issue.column, issue.path) == ("--set", None, None, path)
    assert issue.message.startswith(message)


def test_override_unknown_key_did_you_mean(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, HOOKS_FILE), ("hooks.0.save_step=5",))
    assert issue.format() == (
        "--set: error: hooks[0].save_step: `hooks.0.save_step=5`: unknown key `save_step` for a `checkpoint_saver` "
        "hook (allowed: type, save_steps, save_secs, checkpoint_dir, checkpoint_basename, max_to_keep, chief_only); "
        "did you mean `save_steps`?"
    )


def test_override_unknown_new_section_is_reported_against_set(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL), ("sesion.run_dir=/tmp/x",))
    assert (issue.file, issue.path) == ("--set", "sesion")
    assert issue.message.startswith("`sesion.run_dir=/tmp/x`: unknown key `sesion` at the top level")
    assert issue.message.endswith("did you mean `session`?")


def test_validation_error_from_override_names_it(tmp_path: Path) -> None:
    issue = only_issue(write(tmp_path, MINIMAL), ("data.batch_size=0",))
    assert issue.format() == "--set: error: data.batch_size: `data.batch_size=0`: must be greater than 0 (got 0)"


def test_model_error_caused_by_override_points_at_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, HOOKS_FILE.replace("every_n_iters: 5", "every_n_iter: 5"))
    issue = only_issue(path, ("hooks.0.save_secs=3",))
    assert (issue.file, issue.line, issue.column) == (str(path), 5, 5)
    assert issue.message.endswith("(after `--set hooks.0.save_secs=3`)")


def test_all_bad_overrides_are_reported(tmp_path: Path) -> None:
    error = errors_of(write(tmp_path, MINIMAL), ("x", "hooks.0.a=1"))
    assert [i.message.split(":")[0] for i in error.issues] == ["`x`", "`hooks.0.a=1`"]
    assert "index 0 is out of range for `hooks` (none: the list is empty)" in error.issues[1].message


# --------------------------------------------------------------------------- no TensorFlow


def test_loader_never_imports_tensorflow(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    code = (
        "import sys\n"
        "from hookrun.config_schemas.loader import resolved_yaml\n"
        "from hookrun.runner.config import load_config\n"
        f"resolved_yaml(load_config({str(path)!r}, ['data.batch_size=4']))\n"
        "print('tensorflow' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_loaded_config_equality_ignores_locations(tmp_path: Path) -> None:
    first = load_config(write(tmp_path, MINIMAL))
    second = load_config(write(tmp_path, "\n\n" + MINIMAL))
    assert first == second
    assert first.where("name") != second.where("name")
    assert isinstance(first.config, RunConfigBase)


def test_model_message_with_a_dotted_prefix_is_relocated(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: t
        graph:
          builder: dnn_regressor
          params:
            hidden_units: [4, 0]
        data: {train: data.csv, label: y}
        """,
    )
    issue = only_issue(path)
    assert (issue.line, issue.column, issue.path) == (5, 23, "graph.params.hidden_units[1]")
    assert issue.message.endswith("(got 0)")
    assert not issue.message.startswith("params.")


# --------------------------------------------------------------------------- strict values, YAML 1.2 scalars


def test_plain_scalars_follow_the_yaml_1_2_core_schema(tmp_path: Path) -> None:
    features = "[yes, on, off, y, 1:20, 1_000, 2024-01-01, '=']"
    loaded = load_config(write(tmp_path, MINIMAL.replace("label: y}", f"label: y, features: {features}}}")))
    assert loaded.config.data.features == ["yes", "on", "off", "y", "1:20", "1_000", "2024-01-01", "="]
    text = MINIMAL.replace("label: y}", "label: y, batch_size: 010, epochs: 0x10, shuffle: FALSE}")
    data = load_config(write(tmp_path, text)).config.data
    assert (data.batch_size, data.epochs, data.shuffle) == (10, 16, False)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("batch_size: true", "must be an integer (got true); true and false are not numbers"),
        ("batch_size: '8'", "must be an integer (got '8'); it is quoted, so it is text: remove the quotes"),
        ("batch_size: 8.0", "must be an integer (got 8.0)"),
        ("epochs: 1:20", "must be an integer (got '1:20'); hookrun reads YAML 1.2"),
        ("shuffle: yes", "must be true or false (got 'yes'); hookrun reads YAML 1.2"),
        ("shuffle: 1", "must be true or false (got 1)"),
        ("label_scale: '100'", "must be a number (got '100'); it is quoted"),
    ],
)
def test_values_are_strict(tmp_path: Path, value: str, message: str) -> None:
    issue = only_issue(write(tmp_path, MINIMAL.replace("label: y}", f"label: y, {value}}}")))
    assert issue.path == "data." + value.split(":")[0]
    assert issue.message.startswith(message), issue.message


def test_an_integer_is_a_number(tmp_path: Path) -> None:
    text = MINIMAL.replace("{builder: linear_regressor}", "{builder: linear_regressor, optimizer: {learning_rate: 1}}")
    loaded = load_config(write(tmp_path, text))
    assert loaded.config.graph.optimizer.learning_rate == 1.0


def test_overrides_are_read_as_yaml_1_2_values(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    data = load_config(path, ["data.batch_size=8", "data.shuffle=false", "data.features=[on, 1:20]"]).config.data
    assert data.batch_size == 8 and type(data.batch_size) is int
    assert (data.shuffle, data.features) == (False, ["on", "1:20"])
    assert "must be true or false (got 'yes')" in only_issue(path, ("data.shuffle=yes",)).message
    assert "must be an integer (got '8')" in only_issue(path, ("data.batch_size='8'",)).message


def test_resolved_yaml_quotes_text_that_yaml_1_2_reads_as_numbers(tmp_path: Path) -> None:
    features = "['1e3', '0o17', 'yes', '1:20', 'true']"
    loaded = load_config(write(tmp_path, MINIMAL.replace("label: y}", f"label: y, features: {features}}}")))
    again = load_config(write(tmp_path, resolved_yaml(loaded), "again.yaml"))
    assert again.config.data.features == ["1e3", "0o17", "yes", "1:20", "true"]
    assert yaml.safe_load(resolved_yaml(loaded))["data"]["features"] == ["1e3", "0o17", "yes", "1:20", "true"]


@pytest.mark.parametrize("command", ["validate", "train"])
def test_a_fifo_or_device_config_is_refused_not_waited_on(tmp_path, command):
    """A config that is a FIFO made ``validate`` and ``train`` hang (waiting for a writer that never comes)."""
    import os

    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    for path, kind in [(fifo, "a FIFO (named pipe)"), ("/dev/zero", "a device")]:
        done = subprocess.run(
            [sys.executable, "-m", "hookrun.cli.app", command, str(path), *(["--run-dir", str(tmp_path / "r")]
                                                                            if command == "train" else [])],
            capture_output=True, text=True, timeout=30,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (f"{path}: error: this is {kind}, not a regular file; give the path of a YAML "
                                       "config file (to pass a config through a pipe, write it to a file first)")
    assert not (tmp_path / "r").exists()
