"""TensorBoard as people use it (issue 29), read back with TensorBoard's own data loaders.

``tensorboard --logdir SWEEP`` on a sweep: every run is named after its run directory
(``<run>/train``, ``<run>/eval``, never ``.``), the train run holds the graph, and the HParams
dashboard has each run's ``--set``/``--sweep`` values and the config's hyperparameters.
"""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "250"})

HOOKS = [
    {"type": "stop_at_step", "num_steps": 4},
    {"type": "summary_saver", "save_steps": 1},
    {"type": "step_counter", "every_n_steps": 2},
    {"type": "checkpoint_saver", "save_steps": 2},
    {"type": "evaluation", "every_n_steps": 2, "log": False},
]
RUNS = ("learning_rate=0.01", "learning_rate=0.1")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A two-run sweep over the learning rate (4 steps each), with ``--set data.batch_size=8``."""
    tmp_path = tmp_path_factory.mktemp("tb")
    write_csv(tmp_path / "data.csv", linear_rows(64, seed=1))
    config = base_config(hooks=HOOKS, data={"validation_split": 0.25})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    base = tmp_path / "sweep"
    result = cli.invoke(app, [
        "train", str(path), "--run-dir", str(base), "--set", "data.batch_size=8",
        "--sweep", "graph.optimizer.learning_rate=0.01,0.1",
    ])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in base.iterdir()) == sorted(RUNS)
    return base


def _multiplexer(logdir):
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    return multiplexer


def test_runs_are_named_after_the_run_directory(sweep):
    multiplexer = _multiplexer(sweep)
    runs = sorted(f"{run}/{part}" for run in RUNS for part in ("train", "eval"))
    assert sorted(multiplexer.Runs()) == sorted([*runs, *RUNS])  # <run>: only its hparams (HParams' session)
    scalars = multiplexer.PluginRunToTagToContent("scalars")
    assert sorted(scalars) == runs  # the scalars dashboard: <run>/train and <run>/eval, nothing else
    for run in RUNS:
        tags = multiplexer.GetAccumulator(run).Tags()
        assert tags["tensors"] == ["_hparams_/session_start_info"] and not tags["graph"], tags
    for run in RUNS:
        tags = multiplexer.GetAccumulator(f"{run}/train").Tags()
        assert {"loss", "global_step/sec"} <= set(tags["tensors"]), tags  # scalars, as TensorBoard reads them
        assert tags["graph"] and tags["meta_graph"]  # checkpoint_saver's graph, beside training's scalars
    # One run directory as --logdir: its scalars are in `train` and `eval`, not `.` (which holds the hparams).
    assert sorted(_multiplexer(sweep / RUNS[0]).Runs()) == [".", "eval", "train"]
    assert sorted(_multiplexer(sweep / RUNS[0]).PluginRunToTagToContent("scalars")) == ["eval", "train"]


def _hparams(multiplexer):
    from tensorboard.plugins.hparams import metadata

    found = {}
    for run, tags in multiplexer.PluginRunToTagToContent(metadata.PLUGIN_NAME).items():
        content = tags[metadata.SESSION_START_INFO_TAG]
        info = metadata.parse_session_start_info_plugin_data(content)
        found[run] = {name: getattr(value, value.WhichOneof("kind")) for name, value in info.hparams.items()}
    return found


def test_every_run_has_its_hparams(sweep):
    from tensorboard.plugins.hparams.backend_context import _find_longest_parent_path

    multiplexer = _multiplexer(sweep)
    found = _hparams(multiplexer)
    # The session is the run directory: TensorBoard takes the scalars of the runs below it (train/, eval/)
    # as its metrics, so the dashboard shows val_ metrics beside the values.
    assert sorted(found) == sorted(RUNS)
    for run in RUNS:
        for part in ("train", "eval"):
            assert _find_longest_parent_path(set(found), f"{run}/{part}") == run
    for run, rate in zip(RUNS, (0.01, 0.1), strict=True):
        hparams = found[run]
        assert hparams["graph.optimizer.learning_rate"] == pytest.approx(rate)  # the --sweep value
        assert hparams["data.batch_size"] == 8  # the --set value
        assert hparams["graph.optimizer.name"] == "sgd"  # the config's own
        assert hparams["graph.builder"] == "linear_regressor"
        assert hparams["data.epochs"] == 10


def test_a_set_outside_the_hyperparameters_is_an_hparam_too(tmp_path, make_config, run_train):
    from hookrun.runner.config import load_config

    make_config(hooks=[{"type": "stop_at_step", "num_steps": 2}])
    loaded = load_config(tmp_path / "config.yaml", ["hooks.0.num_steps=3", "session.steps_per_run=1"])
    run_train(loaded)
    found = _hparams(_multiplexer(tmp_path / "run"))
    assert found["."]["hooks.0.num_steps"] == 3 and found["."]["session.steps_per_run"] == 1


def test_hookruns_own_ops_are_under_one_scope(sweep):
    """The graph TensorBoard shows: the guard's checks, the input pipeline, the clock's read, summary_saver's ops.

    All are in `hookrun/`; left at the top: the model, TensorFlow's optimizer and gradients, and the Scaffold's
    init, save and readiness ops (as Estimator's graphs had them).
    """
    graph = _multiplexer(sweep).Graph(f"{RUNS[0]}/train")
    ours = [node for node in graph.node if node.op == "IsFinite" or "Iterator" in node.op or "Dataset" in node.op]
    assert len([node for node in ours if node.op == "IsFinite"]) == 2  # the guard's: the kernel and the bias
    # the evaluation's own copy of the model and its input is one box too: `evaluation/`
    assert [node.name for node in ours if not node.name.startswith(("hookrun/", "evaluation/"))] == []
    top = sorted({node.name.split("/")[0] for node in graph.node})
    assert "hookrun" in top and not any(
        name.startswith(("IsFinite", "All", "stack", "Iterator", "hookrun_", "ScalarSummary", "Merge")) for name in top
    ), top


def test_a_list_is_one_hparam_and_a_mapping_set_is_its_leaves(tmp_path, make_config):
    from hookrun.runner.config import load_config
    from hookrun.runner.run_dir.hparams import run_hparams

    make_config(graph={"builder": "dnn_regressor", "params": {"hidden_units": [4, 2]}})
    loaded = load_config(tmp_path / "config.yaml", ["graph.params.hidden_units=[8]", "session={trace: true}"])
    hparams = run_hparams(loaded)
    assert hparams["graph.params.hidden_units"] == "[8]"  # one column, whatever the list's length
    assert not any(key.startswith("graph.params.hidden_units.") for key in hparams)
    assert hparams["session.trace"] is True and hparams["session.engine"] == "hookrun"  # the mapping's leaves
    assert all(isinstance(value, (bool, int, float, str)) for value in hparams.values())
