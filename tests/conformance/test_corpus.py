"""The conformance corpus: third-party-style hooks run as under ``MonitoredTrainingSession``, with a resume.

Each case trains twice on one run directory (the second run resumes from the first's checkpoint)
under hookrun's engine, under ``session.engine: tf``, and under a plain ``MonitoredTrainingSession``
script on the same graph (``conftest.plain_training_session``), with the hooks of
``corpus_hooks.py``; what the hooks record must be the same all three ways. Together the cases cover
variables and ops made in ``begin()``, ``session.run`` in ``after_create_session``, ``feed_dict``
and ``RunOptions`` in ``SessionRunArgs``, fetches by string name, ``request_stop``, ``FileWriter``
summaries, a hook's own signal handler, and a duck-typed hook.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hookrun.config_schemas.imports import import_object
from tests.conformance.conftest import plain_training_session
from tests.conftest import BATCH_SIZE, event_scalars

#: Six trainings per case (seconds): a hang guard, as conftest.TIME_LIMIT_SECS, so a loaded machine does not fail it.
TIME_LIMIT_SECS = 300.0

CORPUS_SOURCE = (Path(__file__).parent / "corpus_hooks.py").read_text(encoding="utf-8")
SAVE_STEPS = 2
#: data without end: the runs end by stop_at_step or a hook's request_stop
DATA = {"epochs": None}


class Corpus:
    """Run one case's hooks the three ways; each returns the records of its two runs."""

    def __init__(self, tmp_path: Path, module: str, make_config: Callable[..., Any], run_train: Callable[..., Any]):
        self.tmp_path = tmp_path
        self.module = module
        self.make_config = make_config
        self.run_train = run_train
        import_object(f"{module}:RECORDS", tmp_path, what="corpus", callable_required=False)  # as hookrun imports it
        self.hooks_module = sys.modules[module]

    @property
    def records(self) -> list[Any]:
        return self.hooks_module.RECORDS

    def hookrun(self, engine: str, entries: Callable[[Path], list[tuple[str, dict]]], last_steps: list[int]) -> list:
        """Train once per ``last_steps`` entry on one run directory with ``session.engine: engine``."""
        self.records.clear()
        run_dir = self.tmp_path / f"{engine}_run"
        results = []
        for index, last_step in enumerate(last_steps):
            hooks = [
                {"type": "custom", "class": f"{self.module}:{name}", "args": args}
                for name, args in entries(self.tmp_path / f"{engine}_out" / str(index))
            ]
            hooks += [
                {"type": "checkpoint_saver", "save_steps": SAVE_STEPS},
                {"type": "stop_at_step", "last_step": last_step},
            ]
            loaded = self.make_config(hooks=hooks, filename=f"{engine}.yaml", session={"engine": engine}, data=DATA)
            results.append(self.run_train(loaded, run_dir=run_dir))
        return [list(self.records), results]

    def plain(self, entries: Callable[[Path], list[tuple[str, dict]]], last_steps: list[int]) -> list:
        """The same with a plain ``MonitoredTrainingSession`` script."""
        self.records.clear()
        directory = self.tmp_path / "plain_run"
        directory.mkdir()
        for index, last_step in enumerate(last_steps):
            made = entries(self.tmp_path / "plain_out" / str(index))

            def make_hooks(tf: Any, made: list = made) -> list[Any]:
                return [getattr(self.hooks_module, name)(**args) for name, args in made]

            error = plain_training_session(self.make_config, directory, make_hooks, last_step, SAVE_STEPS, data=DATA)
            assert error is None, error
        return list(self.records)

    def run_all(self, entries: Callable[[Path], list[tuple[str, dict]]], last_steps: list[int]) -> list:
        """The records of the three ways; asserts they are equal and returns them."""
        plain = self.plain(entries, last_steps)
        for engine in ("hookrun", "tf"):
            records, results = self.hookrun(engine, entries, last_steps)
            assert records == plain, f"engine {engine}"
            assert results[1].initial_step == results[0].final_global_step  # the second run resumed
        return plain


@pytest.fixture
def corpus(tmp_path: Path, write_module: Callable[[str, str], str], make_config: Any, run_train: Any) -> Corpus:
    module = write_module("corpus_hooks", CORPUS_SOURCE)
    return Corpus(tmp_path, module, make_config, run_train)


def test_a_counter_variable_summaries_and_session_runs(corpus):
    """TokensCounter's variable (made in begin) is restored on resume and its FileWriter summaries
    match; ExamplesPerSecond fetches by string name; LogTrainRun runs the session in
    after_create_session."""

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [
            ("TokensCounter", {"output_dir": str(out), "every_n_steps": 2}),
            ("ExamplesPerSecond", {"batch_size": BATCH_SIZE, "every_n_steps": 2}),
            ("LogTrainRun", {}),
        ]

    records = corpus.run_all(entries, [3, 6])
    assert ("tokens_counter.start", 3, 3 * BATCH_SIZE) in records  # the count restored with the checkpoint
    assert ("tokens_counter", 6, 6 * BATCH_SIZE) in records
    assert records.count(("log_train_run.start", 0)) == 1 and ("log_train_run.end", 3, 3, 6) in records
    # one output directory per run: an event file is named by the second it was opened in
    events = {
        side: [
            scalar
            for run in ("0", "1")
            for scalar in event_scalars(corpus.tmp_path / f"{side}_out" / run, "tokens/count")
        ]
        for side in ("plain", "hookrun", "tf")
    }
    # the step timer fires on the first step of each run, then every 2 steps
    assert events["plain"] == [(1, 8.0), (3, 24.0), (4, 32.0), (6, 48.0)], events
    assert events["hookrun"] == events["tf"] == events["plain"]


def test_run_options_feeds_and_a_duck_typed_hook(corpus):
    """MetadataCapture asks for a full trace through RunOptions on one step; ScaledLoss feeds a
    placeholder it made in begin; PrintLossAndTime is duck-typed and fetches the loss by name."""

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [
            ("MetadataCapture", {"output_dir": str(out), "step": 2}),
            ("ScaledLoss", {"scale": 2.0}),
            ("PrintLossAndTime", {"every_steps": 2}),
        ]

    records = corpus.run_all(entries, [3, 5])
    assert [r for r in records if r[0] == "metadata"] == [("metadata", 2, True, 3)]  # FULL_TRACE is 3
    scaled = [r for r in records if r[0] == "scaled"]
    assert len(scaled) == 5 and all(ratio == 2.0 for _, _, ratio in scaled)
    assert [r[1] for r in records if r[0] == "print_loss"] == [2, 4]
    assert [r for r in records if r[0] == "print_loss.end"] == [("print_loss.end", 3), ("print_loss.end", 5)]
    assert (corpus.tmp_path / "hookrun_out" / "0" / "run_meta").stat().st_size > 0


def test_request_stop_from_a_plateau(corpus):
    """EarlyStopping requests a stop after three steps without a decrease (plateau_delta huge): at
    step 3, and again three steps into the resumed run."""

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [("EarlyStopping", {"num_plateau_steps": 3, "plateau_delta": 1e9})]

    records = corpus.run_all(entries, [50, 50])
    assert records == [("early_stopping.stop", 4), ("early_stopping.stop", 8)]


@pytest.fixture
def keep_handlers():
    """Put SIGTERM's and SIGUSR1's handlers back after the test (the hooks install their own)."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGUSR1)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", ["SIGUSR1", "SIGTERM"], ids=["handler-from-begin", "handler-from-constructor"])
def test_a_hooks_own_signal_handler(corpus, keep_handlers, signum):
    """TrainingPartition's handler (SIGUSR1's installed in begin, SIGTERM's in its constructor)
    flags a stop that its after_run requests; the resumed run goes on to stop_at_step. Under
    hookrun, SIGTERM also stops training gracefully at that step, after the hook's handler ran."""

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [("TrainingPartition", {"signal_at": 2, "signum": signum}), ("LogTrainRun", {})]

    records = corpus.run_all(entries, [10, 4])
    assert records == [
        ("log_train_run.start", 0),
        ("partition.stop", 2, int(getattr(signal, signum))),
        ("partition.end", 2),
        ("log_train_run.end", 0, 2, 2),
        ("log_train_run.start", 2),
        ("partition.end", 4),
        ("log_train_run.end", 2, 2, 4),
    ]
