"""The conformance corpus: third-party-style hooks run as under ``MonitoredTrainingSession``, with a resume.

Each case trains twice on one run directory (the second run resumes from the first's checkpoint)
under hookrun's engine, under ``session.engine: tf``, and under a plain ``MonitoredTrainingSession``
script on the same graph (``conftest.plain_training_session``), with the hooks of
``corpus_hooks.py``; what the hooks record must be the same all three ways. Together the cases cover
variables and ops made in ``begin()``, ``session.run`` in ``after_create_session``, ``feed_dict``
and ``RunOptions`` in ``SessionRunArgs``, fetches by string name, ``request_stop``, ``FileWriter``
summaries, a hook's own signal handler, a duck-typed hook, a hook restoring pretrained weights
(``global_step`` included) under ``stop_at_step: {num_steps}``, and a stop on a predicate of
``global_step``. Those last two also run under ``session.steps_per_run: 5``, where the rule of
``docs/engine.md`` gives the expected records: each ``after_run`` sees the window's last step.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.conftest import RecordingCorpus, plain_training_session
from tests.conftest import BATCH_SIZE, event_scalars

#: Six trainings per case (seconds): a hang guard, as conftest.TIME_LIMIT_SECS, so a loaded machine does not fail it.
TIME_LIMIT_SECS = 300.0

CORPUS_SOURCE = (Path(__file__).parent / "corpus_hooks.py").read_text(encoding="utf-8")
SAVE_STEPS = 2
#: data without end: the runs end by stop_at_step or a hook's request_stop
DATA = {"epochs": None}


class Corpus(RecordingCorpus):
    """Run one case's hooks the three ways; each returns the records of its two runs."""

    def hookrun(
        self,
        engine: str,
        entries: Callable[[Path], list[tuple[str, dict]]],
        last_steps: list[Any],
        steps_per_run: int = 1,
    ) -> list:
        """Train once per ``last_steps`` entry on one run directory with ``session.engine: engine``.

        The hooks run in ``MonitoredTrainingSession``'s order: its ``CheckpointSaverHook`` (a chief hook)
        first, then the user's, then the script's ``StopAtStepHook``. A ``last_steps`` entry is
        ``stop_at_step``'s ``last_step``, or its settings (``{"num_steps": 12}``).
        """
        self.records.clear()
        side = engine if steps_per_run == 1 else f"{engine}_{steps_per_run}"
        run_dir = self.tmp_path / f"{side}_run"
        results = []
        for index, last_step in enumerate(last_steps):
            stop = last_step if isinstance(last_step, dict) else {"last_step": last_step}
            hooks = [{"type": "checkpoint_saver", "save_steps": SAVE_STEPS}]
            hooks += [
                {"type": "custom", "class": f"{self.module}:{name}", "args": args}
                for name, args in entries(self.tmp_path / f"{side}_out" / str(index))
            ]
            hooks.append({"type": "stop_at_step", **stop})
            session = {"engine": engine, "steps_per_run": steps_per_run}
            loaded = self.make_config(hooks=hooks, filename=f"{engine}.yaml", session=session, data=DATA)
            results.append(self.run_train(loaded, run_dir=run_dir))
        return [list(self.records), results]

    def plain(self, entries: Callable[[Path], list[tuple[str, dict]]], last_steps: list[Any]) -> list:
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

    def run_all(self, entries: Callable[[Path], list[tuple[str, dict]]], last_steps: list[Any]) -> list:
        """The records of the three ways; asserts they are equal and returns them."""
        plain = self.plain(entries, last_steps)
        for engine in ("hookrun", "tf"):
            records, results = self.hookrun(engine, entries, last_steps)
            assert records == plain, f"engine {engine}"
            assert results[1].initial_step == results[0].final_global_step  # the second run resumed
        return plain

    def under_n(
        self, entries: Callable[[Path], list[tuple[str, dict]]], last_steps: list[Any], steps_per_run: int
    ) -> dict[str, list]:
        """The records of both engines under ``session.steps_per_run``: ``{engine: [records, results]}``."""
        return {engine: self.hookrun(engine, entries, last_steps, steps_per_run) for engine in ("hookrun", "tf")}


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


def _pretrained_checkpoint(corpus: Corpus, step: int) -> str:
    """A checkpoint of this graph at ``global_step`` ``step``, trained by hookrun (the "pretrained" weights)."""
    import tensorflow as tf

    hooks = [{"type": "checkpoint_saver", "save_steps": 1000}, {"type": "stop_at_step", "last_step": step}]
    loaded = corpus.make_config(hooks=hooks, filename="pretrained.yaml", data=DATA)
    corpus.run_train(loaded, run_dir=corpus.tmp_path / "pretrained")
    path = tf.train.latest_checkpoint(str(corpus.tmp_path / "pretrained"))
    assert path is not None and path.endswith(f"-{step}")
    return path


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_a_weights_restoring_hook_that_moves_global_step(corpus, steps_per_run):
    """PretrainedWeightsLoading sets the weights and global_step 40 in after_create_session; then
    stop_at_step(num_steps: 12) trains 40 -> 52, as TensorFlow's StopAtStepHook counts from the step it
    reads there. The resume does it again (a new hook loads the weights again, global_step 40 included).
    Under N = 5 the windows end on 45, 50 and 52, and the weights are those of 12 single steps."""
    checkpoint = _pretrained_checkpoint(corpus, 40)

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [("PretrainedWeightsLoading", {"checkpoint_path": checkpoint})]

    stops: list[Any] = [{"num_steps": 12}, {"num_steps": 12}]
    if steps_per_run == 1:
        records = corpus.run_all(entries, stops)
    else:
        records = corpus.plain(entries, stops)
        for engine, (ours, results) in corpus.under_n(entries, stops, steps_per_run).items():
            assert ours == records, engine
            assert [(r.steps, r.final_global_step) for r in results] == [(12, 52), (12, 52)], engine
            assert results[1].initial_step == 52  # the second run resumed from the first's checkpoint
    assert [r[:2] for r in records] == [
        ("pretrained.loaded", 40), ("pretrained.end", 52), ("pretrained.loaded", 40), ("pretrained.end", 52)
    ]
    assert records[1][2] != records[3][2]  # the resume trained on the batches after step 52, not the same ones


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_a_stop_on_a_predicate_of_global_step(corpus, steps_per_run):
    """StopOnGlobalStep stops once global_step >= 7 (then >= 12 in the resumed run): at 7 and 12 with
    one step per run, as MonitoredTrainingSession; under N = 5 at the first window end that satisfies
    it, 10 and 15, as the rule says (after_run sees the window's last step)."""

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [("StopOnGlobalStep", {"at_least": (7, 12)[int(out.name)]})]

    if steps_per_run == 1:
        records = corpus.run_all(entries, [50, 50])
        assert records == [("predicate.stop", 7), ("predicate.stop", 12)]
        return
    assert corpus.plain(entries, [50, 50]) == [("predicate.stop", 7), ("predicate.stop", 12)]
    for engine, (records, results) in corpus.under_n(entries, [50, 50], steps_per_run).items():
        assert records == [("predicate.stop", 10), ("predicate.stop", 15)], engine
        assert [(r.initial_step, r.final_global_step) for r in results] == [(0, 10), (10, 15)], engine
        assert [r.stop_reason for r in results] == ["stop requested by a hook"] * 2, engine


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_a_recovered_session_keeps_the_last_step_num_steps_gave(corpus, steps_per_run):
    """A preemption before the step after 45 (AbortedError): the recovered session restores the latest
    checkpoint (45) and runs every after_create_session again, but the weights hook does not load again
    (its own flag) and TensorFlow's StopAtStepHook keeps the last step it fixed on the first session, 52:
    the run ends there, not 12 steps after the restored step. Under N = 5 the windows end on 45, then
    after the recovery on 50 and 52."""
    checkpoint = _pretrained_checkpoint(corpus, 40)

    def entries(out: Path) -> list[tuple[str, dict]]:
        return [("PretrainedWeightsLoading", {"checkpoint_path": checkpoint}), ("PreemptOnce", {"at": 45})]

    stops: list[Any] = [{"num_steps": 12}]
    plain = corpus.plain(entries, stops)
    assert [r[:2] for r in plain] == [
        ("pretrained.loaded", 40), ("preempt.session", None), ("preempt.session", 45), ("pretrained.end", 52)
    ]
    for engine, (records, results) in corpus.under_n(entries, stops, steps_per_run).items():
        if steps_per_run == 1:
            assert records == plain, engine
        else:  # the weights differ: a recovered session restarts the input where the run started (engine.md)
            assert [r[:2] for r in records] == [r[:2] for r in plain], engine
        assert results[0].final_global_step == 52, engine
