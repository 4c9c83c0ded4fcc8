"""The conformance harness: the same recording hooks under hookrun and under a plain ``MonitoredSession`` loop.

The plain side is TensorFlow's documented loop, written out by hand::

    with MonitoredSession(session_creator=ChiefSessionCreator(...), hooks=[...]) as s:
        while not s.should_stop():
            s.run(train_op)

on the graph hookrun itself builds (:func:`hookrun.runner.training.prepare.prepare` -> ``build_graph``) from an
identical config without hooks, in its own run directory. The hooks are built by hand there:
``Recorder`` instances from the same module hookrun imports, and TensorFlow's own ``StopAtStepHook`` /
``CheckpointSaverHook``. Each recorded call is ``(method, hook name, global step)``, the global step
read from the session at the moment of the call (``None`` in ``begin``, which has no session) -- the
same method on both sides.

Every test is bounded in time: the loops are bounded by their configs (``stop_at_step``, finite
``epochs``), and :func:`time_bound` fails a test that runs past ``TIME_LIMIT_SECS``.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from hookrun.config_schemas.imports import import_object
from hookrun.config_schemas.loader import LoadedConfig

#: Wall-time limit of one conformance test (seconds): a guard against a hang, not a speed check. Generous: on a
#: loaded 2-core machine under pytest-xdist a worker's first test also imports TensorFlow (10 s failed there).
TIME_LIMIT_SECS = 120.0

RECORDER = """
import tensorflow as tf

#: Every lifecycle call, in call order: (method, hook name, global step or None).
CALLS = []


class Recorder(tf.compat.v1.train.SessionRunHook):
    \"\"\"Record each call; optionally stop, fail, simulate a preemption, or feed a tensor.\"\"\"

    def __init__(self, name, stop_at=None, fail_in=None, fail_at=None, abort_at=None, feed=None):
        self.name = name
        self.stop_at = stop_at    # request_stop in after_run once global_step >= stop_at
        self.fail_in = fail_in    # "after_run" or "end": raise RuntimeError there
        self.fail_at = fail_at    # ... once global_step >= fail_at (after_run)
        self.abort_at = abort_at  # raise AbortedError once in before_run at this global step
        self.feed = feed          # tensor name fed in every before_run
        self.aborted = False

    def _record(self, method, session):
        step = None if session is None else int(session.run(self.global_step))
        CALLS.append((method, self.name, step))
        return step

    def begin(self):
        self.global_step = tf.compat.v1.train.get_global_step()
        self.fed = tf.compat.v1.get_default_graph().get_tensor_by_name(self.feed) if self.feed else None
        self._record("begin", None)

    def after_create_session(self, session, coord):
        self._record("after_create_session", session)

    def before_run(self, run_context):
        step = self._record("before_run", run_context.session)
        if self.abort_at is not None and step == self.abort_at and not self.aborted:
            self.aborted = True
            raise tf.errors.AbortedError(None, None, f"{self.name}: simulated preemption at step {step}")
        if self.fed is not None:
            return tf.compat.v1.train.SessionRunArgs(fetches=None, feed_dict={self.fed: 0.0})
        return None

    def after_run(self, run_context, run_values):
        step = self._record("after_run", run_context.session)
        if self.fail_in == "after_run" and step >= self.fail_at:
            raise RuntimeError(f"{self.name} failed in after_run at step {step}")
        if self.stop_at is not None and step >= self.stop_at:
            run_context.request_stop()

    def end(self, session):
        self._record("end", session)
        if self.fail_in == "end":
            raise RuntimeError(f"{self.name} failed in end")
"""


@pytest.fixture(autouse=True)
def time_bound(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if it runs longer than ``TIME_LIMIT_SECS`` (SIGALRM in the main thread; else measured).

    A test module may set its own ``TIME_LIMIT_SECS`` (the corpus runs six trainings per case).
    """
    limit = getattr(request.module, "TIME_LIMIT_SECS", TIME_LIMIT_SECS)
    started = time.monotonic()
    armed = threading.current_thread() is threading.main_thread()
    previous: Any = None
    if armed:

        def expire(signum: int, frame: object) -> None:
            raise TimeoutError(f"conformance test ran past {limit} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < limit


@dataclass
class Harness:
    """Run one hook list both ways and return each side's recorded calls."""

    tmp_path: Path
    module: str
    make_config: Callable[..., LoadedConfig]
    run_train: Callable[..., Any]
    engine: str = "hookrun"

    @property
    def calls(self) -> list[tuple[str, str, int | None]]:
        self.recorder_class()  # imports the module
        return sys.modules[self.module].CALLS

    def recorder_class(self) -> Any:
        """``Recorder``, imported as hookrun imports it (beside the config, the same module object)."""
        return import_object(f"{self.module}:Recorder", self.tmp_path, what="Recorder")

    def recorder(self, name: str, **args: Any) -> dict[str, Any]:
        """A ``custom`` hook entry for hookrun's side."""
        return {"type": "custom", "class": f"{self.module}:Recorder", "args": {"name": name, **args}}

    def hookrun(self, hooks: list[dict[str, Any]], **sections: Any) -> tuple[list[tuple[Any, ...]], Any]:
        """Train with hookrun's runner; return (calls, TrainResult or the exception raised)."""
        self.calls.clear()
        sections["session"] = {**sections.get("session", {}), "engine": self.engine}
        loaded = self.make_config(hooks=hooks, filename="hookrun.yaml", **sections)
        try:
            outcome: Any = self.run_train(loaded, run_dir=self.tmp_path / "hookrun_run")
        except Exception as err:  # the test asserts on it
            outcome = err
        return list(self.calls), outcome

    def plain(self, make_hooks: Callable[[Any, Any, Path], list[Any]], **sections: Any) -> tuple[list[Any], Any]:
        """The hand-written ``MonitoredSession`` loop; return (calls, None or the exception raised).

        ``make_hooks(tf, Recorder, run_dir)`` builds the hooks inside the graph.
        """
        from hookrun.runner.training.prepare import prepare

        loaded = self.make_config(hooks=[], filename="plain.yaml", **sections)
        directory = self.tmp_path / "plain_run"
        directory.mkdir()
        prepared = prepare(loaded, directory, Console(quiet=True))
        for close in prepared.on_close:
            close()
        tf = prepared.tf
        recorder_cls = self.recorder_class()
        self.calls.clear()
        outcome: Any = None
        try:
            with prepared.built.graph.as_default():
                hooks = make_hooks(tf, recorder_cls, directory)
                creator = tf.compat.v1.train.ChiefSessionCreator(
                    scaffold=tf.compat.v1.train.Scaffold(), checkpoint_dir=str(directory)
                )
                with tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=hooks) as session:
                    while not session.should_stop():
                        session.run(prepared.built.train_op)
        except Exception as err:
            outcome = err
        finally:
            tf.compat.v1.summary.FileWriterCache.clear()
        return list(self.calls), outcome


def plain_training_session(
    make_config: Callable[..., LoadedConfig],
    directory: Path,
    make_hooks: Callable[[Any], list[Any]],
    last_step: int | dict[str, int],
    save_steps: int,
    filename: str = "plain.yaml",
    inter_op_threads: int | None = None,
    **sections: Any,
) -> Any:
    """A plain ``MonitoredTrainingSession`` script on the graph hookrun builds; returns None or the exception.

    As a user writes it without hookrun::

        with MonitoredTrainingSession(checkpoint_dir=directory, hooks=[*hooks, StopAtStepHook(last_step)],
                                      save_checkpoint_steps=save_steps) as session:
            while not session.should_stop():
                session.run(train_op)

    (summaries and the step counter off, as hookrun runs only its configured hooks). The graph comes
    from :func:`hookrun.runner.training.prepare.prepare` on a config without hooks; re-running it on the same
    ``directory`` resumes from its latest checkpoint (the data resumes there too, as in hookrun).
    ``make_hooks(tf)`` builds the hooks inside the graph. ``last_step`` is the ``StopAtStepHook``'s
    ``last_step``, or its arguments (``{"num_steps": 12}``). ``inter_op_threads`` sets the session's
    ``inter_op_parallelism_threads`` (default: TensorFlow's).
    """
    from hookrun.runner.training.prepare import prepare

    loaded = make_config(hooks=[], filename=filename, **sections)
    prepared = prepare(loaded, directory, Console(quiet=True))
    for close in prepared.on_close:
        close()
    tf = prepared.tf
    try:
        with prepared.built.graph.as_default():
            stop = last_step if isinstance(last_step, dict) else {"last_step": last_step}
            hooks = [*make_hooks(tf), tf.compat.v1.train.StopAtStepHook(**stop)]
            with tf.compat.v1.train.MonitoredTrainingSession(
                checkpoint_dir=str(directory),
                hooks=hooks,
                save_checkpoint_steps=save_steps,
                save_checkpoint_secs=None,
                save_summaries_steps=None,
                save_summaries_secs=None,
                log_step_count_steps=None,
                config=None if inter_op_threads is None
                else tf.compat.v1.ConfigProto(inter_op_parallelism_threads=inter_op_threads),
            ) as session:
                while not session.should_stop():
                    session.run(prepared.built.train_op)
    except Exception as err:  # the test asserts on it
        return err
    finally:
        tf.compat.v1.summary.FileWriterCache.clear()
    return None


class RecordingCorpus:
    """A corpus module's hooks, imported as hookrun imports them, and what they record (``RECORDS``)."""

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


@pytest.fixture(params=["hookrun", "tf"])
def harness(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    write_module: Callable[[str, str], str],
    make_config: Any,
    run_train: Any,
) -> Harness:
    """The harness, once per session engine: hookrun's and TensorFlow's ``MonitoredTrainingSession``."""
    return Harness(tmp_path, write_module("recorder", RECORDER), make_config, run_train, request.param)
