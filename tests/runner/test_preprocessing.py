"""The Preprocessor: statistics from the training split only, missing values, one-hot, labels, the saved state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hookrun.common.errors import DataError, SetupError
from hookrun.config_schemas.graph import GraphConfig
from hookrun.runner.data.preprocessing import Preprocessor, check_label_for_builder
from hookrun.runner.data.reader import CATEGORICAL, NUMERIC, load_raw_data, split_rows
from tests.conftest import data_config, write_data_file


def fitted(tmp_path, config):
    """(raw data, state fitted on its training rows) as the runner makes them."""
    raw = load_raw_data(config, tmp_path)
    return raw, Preprocessor.fit(raw.train, config, raw.split)


# --------------------------------------------------------------------------- the training split only


def test_statistics_fill_values_and_vocabularies_come_from_the_training_split_only(tmp_path):
    """Validation rows are made extreme (numbers, a gap and a category of their own): nothing leaks into the state."""
    n, fraction, seed = 50, 0.2, 3
    train_idx, val_idx = split_rows(n, fraction, seed)
    rng = np.random.default_rng(0)
    a = rng.normal(10.0, 2.0, size=n)
    b = rng.normal(-5.0, 1.0, size=n)
    colour = np.array(["red", "blue"] * (n // 2), dtype=object)
    a[val_idx] = 1e6  # extreme
    colour[val_idx] = "ultraviolet"  # a category seen in validation only
    b_cells = [f"{v:.6f}" for v in b]
    b_cells[int(val_idx[0])] = ""  # a gap in validation: filled with the training median
    lines = [f"{a[i]:.6f},{b_cells[i]},{colour[i]},{i}" for i in range(n)]
    write_data_file(tmp_path, "a,b,colour,y\n" + "\n".join(lines) + "\n")

    config = data_config(validation_split=fraction, seed=seed, missing="median")
    raw, state = fitted(tmp_path, config)
    np.testing.assert_array_equal(raw.train.lines, train_idx + 2)  # header is line 1

    by_name = {c.name: c for c in state.columns}
    assert by_name["a"].mean == pytest.approx(a[train_idx].mean())
    assert by_name["a"].std == pytest.approx(a[train_idx].std())
    assert by_name["a"].mean < 100  # the 1e6 validation values did not reach it
    assert by_name["b"].fill == pytest.approx(np.median(b[train_idx]))
    assert by_name["colour"].vocabulary == ["blue", "red"]

    val = state.transform(raw.validation)
    assert val.num_rows == len(val_idx)
    blue, red = state.feature_names.index("colour=blue"), state.feature_names.index("colour=red")
    np.testing.assert_array_equal(val.features[:, [blue, red]], 0)  # unseen category -> all-zero vector
    np.testing.assert_allclose(val.features[:, 0], (1e6 - by_name["a"].mean) / by_name["a"].std, rtol=1e-5)
    filled = (by_name["b"].fill - by_name["b"].mean) / by_name["b"].std
    assert val.features[0, 1] == pytest.approx(filled, rel=1e-5)

    train = state.transform(raw.train)
    np.testing.assert_allclose(train.features[:, 0].mean(), 0, atol=1e-5)
    np.testing.assert_allclose(train.features[:, 0].std(), 1, atol=1e-5)


def test_a_constant_column_keeps_std_one(tmp_path):
    write_data_file(tmp_path, "a,c,y\n1,5,0\n2,5,1\n3,5,0\n")
    raw, state = fitted(tmp_path, data_config())
    assert state.columns[1].std == 1.0
    np.testing.assert_array_equal(state.transform(raw.train).features[:, 1], 0)


def test_standardize_false_leaves_numbers_as_they_are(tmp_path):
    write_data_file(tmp_path, "a,y\n1,0\n3,1\n")
    raw, state = fitted(tmp_path, data_config(standardize=False))
    assert state.columns[0].mean is None
    np.testing.assert_array_equal(state.transform(raw.train).features[:, 0], [1, 3])


# --------------------------------------------------------------------------- categorical features


def test_one_hot_names_order_and_unseen_category(tmp_path):
    write_data_file(tmp_path, "x,where,y\n1,NEAR BAY,1\n2,INLAND,2\n3,NEAR BAY,3\n")
    write_data_file(tmp_path, "x,where,y\n4,ISLAND,4\n5,INLAND,5\n", name="val.csv")
    raw, state = fitted(tmp_path, data_config(validation="val.csv"))
    assert state.feature_names == ["x", "where=INLAND", "where=NEAR BAY"]
    assert state.kinds == {"x": NUMERIC, "where": CATEGORICAL, "y": NUMERIC}
    np.testing.assert_array_equal(state.transform(raw.train).features[:, 1:], [[0, 1], [1, 0], [0, 1]])
    np.testing.assert_array_equal(state.transform(raw.validation).features[:, 1:], [[0, 0], [1, 0]])


# --------------------------------------------------------------------------- missing values


GAPS = "a,b,y\n1,10,1\n,20,2\n3,,3\n5,40,4\n"


def test_missing_error_names_file_line_and_column(tmp_path):
    path = write_data_file(tmp_path, GAPS)
    with pytest.raises(DataError) as info:
        fitted(tmp_path, data_config())
    assert str(info.value).startswith(f"{path}:3: column 'a' (column 1) is empty; fill it, or set `data.missing: drop`")


def test_missing_drop(tmp_path):
    write_data_file(tmp_path, GAPS)
    raw, state = fitted(tmp_path, data_config(missing="drop", standardize=False))
    data = state.transform(raw.train)
    assert data.dropped_rows == 2
    np.testing.assert_array_equal(data.features, [[1, 10], [5, 40]])


@pytest.mark.parametrize(
    ("policy", "fill_a", "fill_b"),
    [("mean", 3.0, 70 / 3), ("median", 3.0, 20.0), ({"constant": -1}, -1.0, -1.0)],
    ids=["mean", "median", "constant"],
)
def test_missing_fill_policies(tmp_path, policy, fill_a, fill_b):
    write_data_file(tmp_path, GAPS)
    raw, state = fitted(tmp_path, data_config(missing=policy, standardize=False))
    assert [c.fill for c in state.columns] == pytest.approx([fill_a, fill_b])
    data = state.transform(raw.train)
    assert data.dropped_rows == 0
    np.testing.assert_allclose(data.features, [[1, 10], [fill_a, 20], [3, fill_b], [5, 40]], rtol=1e-6)


def test_missing_by_column_overrides_the_global_policy(tmp_path):
    write_data_file(tmp_path, GAPS)
    raw, state = fitted(tmp_path, data_config(missing="drop", missing_by_column={"b": "median"}, standardize=False))
    data = state.transform(raw.train)
    assert data.dropped_rows == 1  # the row without `a`; b's median comes from the rows kept (10, 40)
    np.testing.assert_allclose(data.features, [[1, 10], [3, 25], [5, 40]])
    assert state.columns[1].missing == "median" and state.columns[0].missing == "drop"


def test_missing_statistics_are_computed_after_filling(tmp_path):
    write_data_file(tmp_path, "a,y\n0,1\n,2\n4,3\n")
    _, state = fitted(tmp_path, data_config(missing="mean"))
    assert state.columns[0].fill == 2.0
    assert state.columns[0].mean == pytest.approx(2.0)
    assert state.columns[0].std == pytest.approx(np.std([0, 2, 4]))


def test_categorical_constant_fill_is_a_category(tmp_path):
    write_data_file(tmp_path, "c,y\nred,1\n,2\nblue,3\n")
    raw, state = fitted(tmp_path, data_config(missing={"constant": "unknown"}))
    assert state.columns[0].vocabulary == ["blue", "red", "unknown"]
    np.testing.assert_array_equal(state.transform(raw.train).features, [[0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_categorical_gap_under_median_is_an_error(tmp_path):
    path = write_data_file(tmp_path, "c,y\nred,1\n,2\n")
    with pytest.raises(DataError, match=rf"{path}:3: column 'c' \(column 1\) is empty, and the column is categorical"):
        fitted(tmp_path, data_config(missing="median"))


def test_a_missing_label_is_never_filled(tmp_path):
    path = write_data_file(tmp_path, "a,y\n1,1\n2,\n")
    with pytest.raises(DataError, match=rf"{path}:3: column 'y' \(column 2\) is empty; a label is never filled"):
        fitted(tmp_path, data_config(missing="median"))
    raw, state = fitted(tmp_path, data_config(missing="median", missing_by_column={"y": "drop"}))
    assert state.transform(raw.train).num_rows == 1


def test_text_constant_for_a_numeric_column(tmp_path):
    write_data_file(tmp_path, GAPS)
    with pytest.raises(DataError, match="column 'a' is numeric; its fill `constant: 'n/a'` is not a number") as info:
        fitted(tmp_path, data_config(missing_by_column={"a": {"constant": "n/a"}, "b": "drop"}))
    assert info.value.loc == ("data", "missing_by_column", "a")


# --------------------------------------------------------------------------- labels


def test_label_scale_divides_the_label(tmp_path):
    write_data_file(tmp_path, "a,y\n1,100000\n2,250000\n")
    raw, state = fitted(tmp_path, data_config(label_scale=100000))
    assert state.label_scale == 100000
    np.testing.assert_allclose(state.transform(raw.train).labels[:, 0], [1.0, 2.5])


def test_a_text_label_becomes_class_ids_from_the_training_vocabulary(tmp_path):
    write_data_file(tmp_path, "a,kind\n1,cat\n2,dog\n3,cat\n4,emu\n")
    write_data_file(tmp_path, "a,kind\n1,dog\n2,yak\n", name="val.csv")
    config = data_config(label="kind", validation="val.csv")
    raw, state = fitted(tmp_path, config)
    assert state.label.vocabulary == ["cat", "dog", "emu"]
    np.testing.assert_array_equal(state.transform(raw.train).labels[:, 0], [0, 1, 0, 2])
    with pytest.raises(DataError, match=r"val\.csv:3: column 'kind' \(column 2\) has class 'yak', which the training"):
        state.transform(raw.validation)
    check_label_for_builder(GraphConfig(builder="dnn_classifier", params={"n_classes": 3}), state, raw.train)
    with pytest.raises(DataError, match=r"has 3 classes in the training rows \(cat, dog, emu\) but n_classes is 2"):
        check_label_for_builder(GraphConfig(builder="dnn_classifier", params={"n_classes": 2}), state, raw.train)
    with pytest.raises(DataError, match="label column 'kind' has 'cat', not a number"):
        check_label_for_builder(GraphConfig(builder="dnn_regressor"), state, raw.train)


def test_numeric_class_ids_are_checked(tmp_path):
    path = write_data_file(tmp_path, "a,y\n1,0\n2,1\n3,2\n")
    raw, state = fitted(tmp_path, data_config())
    check_label_for_builder(GraphConfig(builder="linear_classifier", params={"n_classes": 3}), state, raw.train)
    with pytest.raises(DataError, match=rf"{path}:4: column 'y' \(column 2\) has 2, not a class id 0..1"):
        check_label_for_builder(GraphConfig(builder="linear_classifier"), state, raw.train)


# --------------------------------------------------------------------------- the saved state


def test_save_and_load_round_trip(tmp_path):
    write_data_file(tmp_path, "a,c,y\n1,red,1\n,blue,2\n3,red,3\n")
    raw, state = fitted(tmp_path, data_config(missing_by_column={"a": "median"}, label_scale=2))
    state.save(tmp_path / "preprocessing.json")
    saved = json.loads((tmp_path / "preprocessing.json").read_text())
    assert saved["format"] == 1 and saved["feature_names"] == ["a", "c=blue", "c=red"]
    loaded = Preprocessor.load(tmp_path / "preprocessing.json", data_config())
    assert loaded == state
    np.testing.assert_array_equal(loaded.transform(raw.train).features, state.transform(raw.train).features)


def test_loads_the_old_standardizer_file(tmp_path):
    write_data_file(tmp_path, "a,b,y\n1,2,3\n")
    old = {"standardize": {"feature_names": ["a", "b"], "mean": [1.0, 2.0], "std": [2.0, 4.0]}}
    (tmp_path / "preprocessing.json").write_text(json.dumps(old))
    state = Preprocessor.load(tmp_path / "preprocessing.json", data_config())
    assert state.feature_names == ["a", "b"]
    raw = load_raw_data(data_config(), tmp_path)
    np.testing.assert_allclose(state.transform(raw.train).features, [[0, 0]])


def test_a_resumed_run_refuses_a_state_that_no_longer_fits(tmp_path):
    write_data_file(tmp_path, GAPS)
    config = data_config(missing="median")
    raw, state = fitted(tmp_path, config)
    state.check_resumable(config, raw.split, tmp_path / "p.json")
    with pytest.raises(SetupError, match=r"p\.json: the run's saved preprocessing does not match.*policy of 'a'"):
        state.check_resumable(data_config(missing="mean"), raw.split, tmp_path / "p.json")
    with pytest.raises(SetupError, match="rows/split"):
        state.check_resumable(config, {**raw.split, "train_rows": 99}, tmp_path / "p.json")


def test_not_a_state_file(tmp_path):
    (tmp_path / "p.json").write_text("[1, 2]")
    with pytest.raises(SetupError, match="not a hookrun preprocessing state"):
        Preprocessor.load(tmp_path / "p.json", data_config())


# --------------------------------------------------------------------------- resume through the runner


def test_a_resumed_run_reuses_the_saved_state(make_config, run_train, linear_csv):
    hooks = [{"type": "evaluation", "every_n_steps": 4}, {"type": "checkpoint_saver", "save_steps": 100}]
    data = {"validation_split": 0.25, "missing": "median", "epochs": 1}
    first = run_train(make_config(hooks=hooks, data=data))
    state_file = first.run_dir / "preprocessing.json"
    saved = json.loads(state_file.read_text())
    assert saved["split"] == {"validation_split": 0.25, "seed": 0, "train_rows": 48, "validation_rows": 16}

    # Same rows, other numbers: refitting would change every statistic; a resumed run must not refit. (x100 made
    # the resumed training diverge, which now ends the run `failed`: a non-finite last evaluation.)
    lines = linear_csv.read_text().splitlines()
    scaled = [lines[0]] + [",".join(f"{float(v) * 2 + 1:.6f}" for v in line.split(",")) for line in lines[1:]]
    linear_csv.write_text("\n".join(scaled) + "\n")
    second = run_train(make_config(hooks=hooks, data={**data, "epochs": 2}))
    assert second.initial_step == first.final_global_step > 0
    assert json.loads(state_file.read_text()) == saved

    with pytest.raises(SetupError, match="saved preprocessing does not match the config or data.*policy of 'a'"):
        run_train(make_config(hooks=hooks, data={**data, "epochs": 3, "missing": "mean"}))
    with pytest.raises(SetupError, match="rows/split"):
        run_train(make_config(hooks=hooks, data={**data, "epochs": 3, "validation_split": 0.5}))


def _in_thread(call, seconds=60.0):
    """Run ``call`` in a daemon thread; return ``(finished, exception)`` (a blocked read does not hang the test)."""
    import threading

    outcome: dict = {}

    def target():
        try:
            call()
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), outcome.get("error")


def _unblock(fifo):
    """Open ``fifo`` for writing without blocking, so a reader stuck on it (old code) returns."""
    import os

    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_a_fifo_in_place_of_the_state_is_refused_not_read(tmp_path):
    import os

    fifo = tmp_path / "preprocessing.json"
    os.mkfifo(fifo)
    try:
        finished, error = _in_thread(lambda: Preprocessor.load(fifo, data_config()))
    finally:
        _unblock(fifo)
    assert finished, "Preprocessor.load blocked on a FIFO"
    assert isinstance(error, SetupError)
    assert str(error).startswith(f"{fifo}: cannot read the saved preprocessing (not a regular file)")


def test_a_resumed_run_with_a_fifo_for_its_state_exits_2_at_once(make_config, run_train, tmp_path):
    import os
    import subprocess
    import sys

    hooks = [{"type": "checkpoint_saver", "save_steps": 100}]
    loaded = make_config(hooks=hooks, data={"epochs": 1})
    run_train(loaded, run_dir=tmp_path / "r")  # the first run in this process (no second TensorFlow import)
    run = [sys.executable, "-m", "hookrun.cli.app", "train", str(loaded.path), "--run-dir", str(tmp_path / "r")]
    state = tmp_path / "r" / "preprocessing.json"
    state.unlink()
    os.mkfifo(state)
    try:
        done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    finally:
        _unblock(state)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
