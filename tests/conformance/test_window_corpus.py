"""The ``session.steps_per_run`` corpus (issue 22): third-party hooks at N = 1 and N = 5, with a resume.

Each case trains twice on one run directory (the second run resumes from the first's checkpoint)
under hookrun's engine and under ``session.engine: tf``, and compares what the hooks of
``window_hooks.py`` record with a plain ``MonitoredTrainingSession`` script on the same graph at one
step per call. At N = 1 the plain script calls the hooks at every step; at N = 5 it calls them through
``AtWindowEnds``, at each window's last step only: the rule of docs/engine.md ("What a hook's fetches
and feeds give") as the expected outcome. A hook the rule refuses must be refused by both engines
before the first step (exit 2, naming the hook, the tensor and ``steps_per_run: 1``), on the resumed
run too, and train nothing.

Both sides run with one inter-op thread: a ``global_step`` fetched beside the train op then reads the
value before the step's update on every step (with more threads TensorFlow's executor may run the
increment first, ``tests/test_fetch_order.py``), so the records are exact on both sides.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hookrun.common.errors import SetupError
from tests.conformance.conftest import RecordingCorpus, plain_training_session
from tests.conftest import BATCH_SIZE

#: Six trainings per test (seconds).
TIME_LIMIT_SECS = 120.0

SOURCE = (Path(__file__).parent / "window_hooks.py").read_text(encoding="utf-8")
#: Two runs on one directory: 0 -> 12, then resumed 12 -> 24 (windows of 5, 5 and 2 steps each at N = 5).
LAST_STEPS = [12, 24]
SAVE_STEPS = 2
DATA = {"epochs": None}  # the runs end by stop_at_step
SESSION = {"inter_op_parallelism_threads": 1}
#: The linear data's feature columns (a, b).
COLUMNS = 2

Entries = Callable[[Path], list[tuple[str, dict[str, Any]]]]


class WindowCorpus(RecordingCorpus):
    """Run one case's hooks under hookrun (one engine) and under the plain script; each returns the records."""

    def hookrun(self, engine: str, n: int, entries: Entries) -> tuple[list[Any], list[Any]]:
        """Train once per :data:`LAST_STEPS` entry on one run directory; (records, results or exceptions)."""
        self.records.clear()
        outcomes: list[Any] = []
        for index, last_step in enumerate(LAST_STEPS):
            hooks = [
                {"type": "custom", "class": f"{self.module}:{name}", "args": args}
                for name, args in entries(self.tmp_path / f"{engine}{n}_out" / str(index))
            ]
            hooks += [
                {"type": "checkpoint_saver", "save_steps": SAVE_STEPS},
                {"type": "stop_at_step", "last_step": last_step},
            ]
            loaded = self.make_config(hooks=hooks, filename=f"{engine}{n}.yaml", data=DATA,
                                      session={**SESSION, "engine": engine, "steps_per_run": n})
            try:
                outcomes.append(self.run_train(loaded, run_dir=self.tmp_path / f"{engine}{n}_run"))
            except Exception as err:  # the test asserts on it
                outcomes.append(err)
        return list(self.records), outcomes

    def plain(self, n: int, entries: Entries) -> list[Any]:
        """The hooks under a plain ``MonitoredTrainingSession``, one step per call (``AtWindowEnds`` for n > 1)."""
        self.records.clear()
        directory = self.tmp_path / f"plain{n}_run"
        directory.mkdir()
        module = self.hooks_module
        for index, last_step in enumerate(LAST_STEPS):
            made = entries(self.tmp_path / f"plain{n}_out" / str(index))

            def make_hooks(tf: Any, made: Any = made, last_step: int = last_step) -> list[Any]:
                hooks = [getattr(module, name)(**args) for name, args in made]
                return [module.AtWindowEnds(hook, n, last_step) for hook in hooks] if n > 1 else hooks

            failed = plain_training_session(
                self.make_config, directory, make_hooks, last_step, SAVE_STEPS, filename=f"plain{n}.yaml",
                inter_op_threads=1, data=DATA, session=SESSION,
            )
            if failed is not None:
                raise failed
        return list(self.records)

    def check(self, n: int, entries: Entries, stops: list[int] | None = None) -> list[Any]:
        """Both engines record what the plain script records, the second run resumed, and each run ended at
        ``stops`` (default :data:`LAST_STEPS`); returns the records."""
        expected = self.plain(n, entries)
        for engine in ("hookrun", "tf"):
            records, outcomes = self.hookrun(engine, n, entries)
            assert not any(isinstance(o, Exception) for o in outcomes), outcomes
            assert records == expected, f"engine {engine}, steps_per_run {n}"
            assert outcomes[1].initial_step == outcomes[0].final_global_step
            assert [o.final_global_step for o in outcomes] == (stops or LAST_STEPS)
        return expected

    def check_refused(self, entries: Entries, name: str, method: str, tensor: str) -> None:
        """At N = 5 both engines refuse before the first step, on the resumed run too, and train nothing."""
        for engine in ("hookrun", "tf"):
            _, outcomes = self.hookrun(engine, 5, entries)
            for outcome in outcomes:
                assert isinstance(outcome, SetupError), outcome
                message = str(outcome)
                assert message.startswith(f"hooks[0] (custom {self.module}:{name}).{method}()"), message
                assert f"'{tensor}'" in message and "set session.steps_per_run: 1" in message, message
            steps = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (self.tmp_path / f"{engine}5_run").glob(
                "model.ckpt-*.index"))
            assert steps in ([], [0]), steps  # checkpoint_saver's save at session creation, if any: no step trained


@pytest.fixture
def corpus(tmp_path: Path, write_module: Callable[[str, str], str], make_config: Any, run_train: Any,
           linear_csv: Path) -> WindowCorpus:
    return WindowCorpus(tmp_path, write_module("window_hooks", SOURCE), make_config, run_train)


def _metric(out: Path) -> list[tuple[str, dict[str, Any]]]:
    return [("LoggingMetric", {"tensors": {"loss": "loss:0"}, "every_n_iter": 2})]


@pytest.mark.parametrize("n", [1, 5])
def test_a_metric_logging_hook_gets_the_loss_and_global_step_of_the_windows_last_step(corpus, n):
    """LoggingMetricHook: the loss by name and global_step. At N = 5 every second window logs the loss and
    global_step (4, 9, 11 read before the update) of its last step (was: the unfed placeholder's error)."""
    records = corpus.check(n, _metric)
    if n == 5:  # windows end at 5, 10, 12 and, resumed, 17, 22, 24: calls 0 and 2 of each session log
        assert [(r[0], r[1], r[3]) for r in records] == [("metric", "loss", 4), ("metric", "loss", 11),
                                                         ("metric", "loss", 16), ("metric", "loss", 23)]
    else:
        assert [r[3] for r in records] == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22]


@pytest.mark.parametrize("n", [1, 5])
def test_profiler_hook_reads_global_step_at_the_windows_last_step(corpus, n):
    """ProfilerHook: its global-step read gives 4, 9, 11 at N = 5 (was: 0, 5, 10, the windows' first steps);
    its timer then traces the window ending at 12 (and 24), as it does seen at those steps at N = 1."""

    def entries(out: Path) -> list[tuple[str, dict[str, Any]]]:
        return [("Profiler", {"output_dir": str(out), "save_steps": 5})]

    records = corpus.check(n, entries)
    timelines = [r[1] for r in records if r[0] == "profiler.timelines"]
    if n == 5:
        assert [r[1] for r in records if r[0] == "profiler.step"] == [4, 9, 11, 16, 21, 23]
        assert timelines == [("timeline-12.json",), ("timeline-24.json",)]
    else:
        assert timelines == [("timeline-10.json", "timeline-5.json"), ("timeline-17.json", "timeline-22.json")]


def test_feed_fn_hook_feeding_the_steps_input(corpus):
    """FeedFnHook feeding features:0 changes training at N = 1, alike under hookrun and TensorFlow; at N = 5
    the loop would drop it (was: dropped without a word): refused before the first step."""

    def entries(out: Path) -> list[tuple[str, dict[str, Any]]]:
        return [("FeedFeatures", {"value": 0.5, "rows": BATCH_SIZE, "columns": COLUMNS})]

    records = corpus.check(1, entries)
    assert len(records) == 2
    corpus.check_refused(entries, "FeedFeatures", "before_run", "features:0")


def test_final_ops_hook_running_the_loss_in_end(corpus):
    """FinalOpsHook: the loss in end() (a new batch's) at N = 1 alike; at N = 5 refused at begin, before the
    first step (was: the unfed placeholder's error in end(), after training)."""

    def entries(out: Path) -> list[tuple[str, dict[str, Any]]]:
        return [("FinalLoss", {})]

    records = corpus.check(1, entries)
    assert [r[0] for r in records] == ["final_ops", "final_ops"]
    corpus.check_refused(entries, "FinalLoss", "end", "loss:0")


@pytest.mark.parametrize(("n", "stops"), [(1, [8, 16]), (5, [10, 20])])
def test_a_stop_on_a_predicate_of_global_step(corpus, n, stops):
    """A hook stopping once the global_step it fetches reads 7 past the session's start: at N = 1 after step 8
    (it reads 7), at N = 5 after the window ending at 10 (it reads 9; was: 0, 5, 10 read, stopping at 15), and
    the resumed run likewise."""

    def entries(out: Path) -> list[tuple[str, dict[str, Any]]]:
        return [("StopAtPredicate", {"steps": 7})]

    records = corpus.check(n, entries, stops)
    assert records == [("predicate.stop", stops[0] - 1), ("predicate.stop", stops[1] - 1)]
