"""``hookrun schema`` checks ``graph.params`` of the built-in builders and every ``*feature_columns`` entry."""

from __future__ import annotations

import copy

import pytest
import yaml
from jsonschema import Draft202012Validator

from hookrun.cli.commands.schema import run_config_schema
from tests.conftest import CONFIGS


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = run_config_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def wide_deep() -> dict:
    return yaml.safe_load((CONFIGS / "california_housing_wide_deep.yaml").read_text(encoding="utf-8"))


def test_the_wide_deep_configs_are_valid(validator):
    assert not list(validator.iter_errors(wide_deep()))
    classifier = yaml.safe_load((CONFIGS / "california_ocean_wide_deep_classifier.yaml").read_text(encoding="utf-8"))
    assert not list(validator.iter_errors(classifier))


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda p: p["dnn_feature_columns"].__setitem__(0, {"numerc": "median_income"}), "dnn_feature_columns"),
        (lambda p: p["dnn_feature_columns"][8].__setitem__("dimension", 0), "dnn_feature_columns"),
        (lambda p: p["linear_feature_columns"][2].__setitem__("hash_buckets", 10), "linear_feature_columns"),
        (lambda p: p.__setitem__("dnn_hidden_unit", [3]), "params"),
        (lambda p: p.__setitem__("dnn_optimizer", "adagrad"), "dnn_optimizer"),
    ],
    ids=["unknown kind", "embedding dimension 0", "unknown argument", "unknown param", "optimizer name"],
)
def test_a_bad_column_or_param_is_refused(validator, change, path):
    config = copy.deepcopy(wide_deep())
    change(config["graph"]["params"])
    errors = list(validator.iter_errors(config))
    assert errors and any(path in "/".join(map(str, e.absolute_path)) or path == "params" for e in errors)


def test_a_dense_builders_params_are_checked_too(validator):
    config = yaml.safe_load((CONFIGS / "california_housing_dnn.yaml").read_text(encoding="utf-8"))
    config["graph"].setdefault("params", {})["hidden_unit"] = [3]
    assert list(validator.iter_errors(config))
