"""Property tests: however a valid config is mangled, hookrun answers with located one-line issues, never a crash.

Start from valid configs (the shipped ``configs/mtcars_linear.yaml`` and a
minimal one, their data pointed at ``configs/data/mtcars.csv`` by absolute
path), apply random mutations (drop a key, misspell a key, change a value's
type, unicode text, huge and negative numbers, deep nesting, duplicated keys,
``--set`` overrides), write the YAML to a temporary directory and check:

- ``load_config`` + ``preflight`` either succeed or raise ``ConfigError``;
- every issue has a line number unless it comes from ``--set``;
- every issue formats as exactly one line;
- through the CLI (in-process), ``validate`` exits 0 or 2 and never prints a traceback.
"""

from __future__ import annotations

import copy
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.config_schemas.loader import OVERRIDE_FILE, ConfigError, ConfigIssue
from hookrun.runner.config import load_config
from hookrun.runner.preflight import preflight

REPO = Path(__file__).resolve().parents[1]
DATA = str((REPO / "configs" / "data" / "mtcars.csv").resolve())
MTCARS_TEXT = (REPO / "configs" / "mtcars_linear.yaml").read_text(encoding="utf-8")
MTCARS_TEXT_ABS = MTCARS_TEXT.replace("train: data/mtcars.csv", f"train: {DATA}")
MINIMAL = {"name": "fuzz", "graph": {"builder": "linear_regressor"}, "data": {"train": DATA, "label": "mpg"}}
MINIMAL["data"]["features"] = ["wt"]  # type: ignore[index]
BASES: list[Any] = [yaml.safe_load(MTCARS_TEXT_ABS), MINIMAL]

Path_ = tuple[str | int, ...]

# --------------------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from([0, -1, 10**30, -(10**30), 2**63, 1.5, -0.0, 1e308, 1e-320]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["", " ", "abc", "maybe", "yes", "~", "null", "1e3", "0x1F", "gpu:x", "a\nb", "\t", "é✓🚀"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
unicode_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30
)


def nested(depth: int, leaf: Any, use_dicts: bool) -> Any:
    """``leaf`` inside ``depth`` levels of one-element lists or single-key mappings."""
    for level in range(depth):
        leaf = {f"k{level}": leaf} if use_dicts else [leaf]
    return leaf


def typo(key: str, position: int, kind: int) -> str:
    """A misspelling of ``key``: drop, double, swap or change the case of one character."""
    if not key:
        return "x"
    i = position % len(key)
    if kind == 0 and len(key) > 1:
        return key[:i] + key[i + 1 :]
    if kind == 1:
        return key[:i] + key[i] + key[i:]
    if kind == 2 and len(key) > 1:
        j = min(i + 1, len(key) - 1)
        chars = list(key)
        chars[i], chars[j] = chars[j], chars[i]
        swapped = "".join(chars)
        return swapped if swapped != key else key + "s"
    return key.upper() if key.upper() != key else key + "_"


def locations(node: Any, here: Path_ = ()) -> Iterator[Path_]:
    """Every key and list index below ``node`` (not ``()`` itself)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*here, key)
            yield from locations(value, (*here, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*here, index)
            yield from locations(value, (*here, index))


def parent_of(data: Any, loc: Path_) -> Any:
    for part in loc[:-1]:
        data = data[part]
    return data


MUTATIONS = ("drop", "typo", "retype", "unicode", "huge", "negative", "deep", "add_key")


def mutate(draw: Any, data: Any) -> Any:
    """Apply one mutation at a random location of ``data`` (in place where possible); return the result."""
    kind = draw(st.sampled_from(MUTATIONS))
    locs = list(locations(data))
    if not locs:
        return draw(values)
    loc = draw(st.sampled_from(locs))
    parent = parent_of(data, loc)
    last = loc[-1]
    if kind == "drop":
        del parent[last]
    elif kind == "typo" and isinstance(parent, dict):
        new_key = typo(str(last), draw(st.integers(0, 50)), draw(st.integers(0, 3)))
        parent[new_key] = parent.pop(last)
    elif kind == "unicode" and isinstance(parent, dict) and draw(st.booleans()):
        parent[draw(unicode_text)] = parent.pop(last)
    elif kind == "unicode":
        parent[last] = draw(unicode_text)
    elif kind == "huge":
        parent[last] = draw(st.sampled_from([10**30, -(10**30), 10**100, 2**64, 1e300]))
    elif kind == "negative":
        parent[last] = draw(st.sampled_from([-1, -100, -0.5, -(10**30)]))
    elif kind == "deep":
        depth = draw(st.integers(1, 100))
        parent[last] = nested(depth, draw(scalars), draw(st.booleans()))
    elif kind == "add_key":
        target = parent[last] if isinstance(parent[last], dict) else parent
        if isinstance(target, dict):
            target[draw(st.text(min_size=1, max_size=12))] = draw(values)
        else:
            target.append(draw(values))
    else:  # retype, or a typo of a list index
        parent[last] = draw(values)
    return data


def duplicate_a_key(text: str, choice: int) -> str:
    """Repeat one ``key: ...`` line right after itself (a duplicate key in the same mapping)."""
    lines = text.splitlines(keepends=True)
    keyed = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_][\w]*:", line)]
    if not keyed:
        return text
    i = keyed[choice % len(keyed)]
    return "".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])


@st.composite
def config_texts(draw: Any) -> tuple[str, list[str]]:
    """A mutated config as YAML text, and ``--set`` overrides (usually none)."""
    if draw(st.integers(0, 9)) == 0:
        text = MTCARS_TEXT_ABS  # the file as written: comments, flow mappings
    else:
        data = copy.deepcopy(draw(st.sampled_from(BASES)))
        for _ in range(draw(st.integers(1, 4))):
            data = mutate(draw, data)
        text = yaml.safe_dump(data, allow_unicode=draw(st.booleans()), sort_keys=False, width=10**6)
    if draw(st.integers(0, 7)) == 0:
        text = duplicate_a_key(text, draw(st.integers(0, 100)))
    overrides: list[str] = []
    if draw(st.integers(0, 4)) == 0:
        path = draw(st.sampled_from(["data.batch_size", "hooks.0.type", "device", "graph.params.l2", "nope.x", "a..b"]))
        value = draw(st.sampled_from(["8", "-1", "abc", "[1", "{a: 1}", "null", "10000000000000000000000000000000"]))
        overrides.append(f"{path}={value}")
    return text, overrides


# --------------------------------------------------------------------------- checks


def assert_well_formed(issues: list[ConfigIssue]) -> None:
    for issue in issues:
        text = issue.format()
        assert issue.line is not None or issue.file == OVERRIDE_FILE, f"no line number: {text}"
        assert "\n" not in text and len(text.splitlines()) == 1, f"not one line: {text!r}"
        assert issue.severity in ("error", "warning")


def check_in_process(text: str, overrides: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            loaded = load_config(path, overrides)
        except ConfigError as err:
            assert err.issues
            assert_well_formed(err.issues)
            return
        assert_well_formed(preflight(loaded))


@pytest.mark.parametrize("text", [MTCARS_TEXT_ABS, yaml.safe_dump(MINIMAL)])
def test_bases_are_valid(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_text(text, encoding="utf-8")
        loaded = load_config(path)
        assert [i for i in preflight(loaded) if i.severity == "error"] == []


SUPPRESSED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=150, deadline=None, suppress_health_check=SUPPRESSED)
@given(config_texts())
def test_mutated_configs_fail_cleanly(case: tuple[str, list[str]]) -> None:
    check_in_process(*case)


@pytest.mark.parametrize(
    "text",
    [
        "name: demo\n\"a\\nb\": 1\n",  # a key with a line break
        "name: \"x\\u2028y\"\ngraph: {builder: linear_regressor}\ndata: {train: t.csv, label: y}\n",
        f"name: ok\ngraph: {{builder: linear_regressor}}\ndata: {{train: {'x' * 300}.csv, label: y}}\n",
        'name: ok\ngraph: {builder: linear_regressor}\ndata: {train: "a\\0b.csv", label: y}\n',
        "x: " + "[" * 100 + "]" * 100 + "\n",
        "x: " + "{a: " * 100 + "1" + "}" * 100 + "\n",
        "name: " + "9" * 400 + "\n",
        "name: " + "9" * 5000 + "\n",
        "name: t\ngraph: {builder: linear_regressor}\ndata: {train: t.csv, label: y, batch_size: 1e999}\n",
        "name: t\ngraph: {builder: linear_regressor, optimizer: {learning_rate: .nan}}\n",
    ],
    ids=[
        "newline-key", "line-separator", "long-path", "nul-path", "deep-lists", "deep-maps", "huge-int",
        "5000-digit-int", "float-inf", "float-nan",
    ],
)
def test_known_hard_cases(text: str) -> None:
    check_in_process(text, [])


@settings(max_examples=40, deadline=None, suppress_health_check=SUPPRESSED)
@given(config_texts())
def test_cli_validate_exits_0_or_2(case: tuple[str, list[str]]) -> None:
    text, overrides = case
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_text(text, encoding="utf-8")
        args = ["validate", str(path)]
        for override in overrides:
            args += ["--set", override]
        result = CliRunner().invoke(app, args)
        assert result.exit_code in (0, 2), result.output
        assert "Traceback" not in result.output
        assert "internal error" not in result.output
        assert sorted(p.name for p in Path(directory).iterdir()) == ["config.yaml"]
