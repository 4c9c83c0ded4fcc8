"""The step clock, and hookrun's clock-driven hooks against TensorFlow's own, side by side on real sessions.

Each case runs the same tiny graph twice under TensorFlow's plain ``MonitoredSession``: once with
TensorFlow's ``StopAtStepHook``, ``CheckpointSaverHook``, ``SummarySaverHook`` and ``StepCounterHook``,
once with hookrun's versions on one shared :class:`StepClock`. The train op adds ``increment`` to
``global_step`` per run: 1 is what hookrun builds (the clock counts), 2 and 0 are custom train ops
the clock must notice (it switches to reading ``global_step``, as TensorFlow's hooks do every step).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import tensorflow as tf

from hookrun.hooks.checkpoint_saver.hook import CheckpointSaverHook
from hookrun.hooks.step_clock import StepClock
from hookrun.hooks.step_counter.hook import StepCounterHook
from hookrun.hooks.stop_at_step.hook import StopAtStepHook
from hookrun.hooks.summary_saver.hook import SummarySaverHook

v1 = tf.compat.v1
EVERY = 5
LAST_STEP = 23
RUN_LIMIT = 40  # increment 0 never reaches LAST_STEP


def _run(directory: Path, increment: int, ours: bool) -> dict:
    """One run: the hooks' artefacts, the runs made and the global step at the end."""
    graph = tf.Graph()
    with graph.as_default():
        global_step = v1.train.get_or_create_global_step()
        weight = v1.get_variable("w", initializer=0.0)
        train_op = tf.group(v1.assign_add(weight, 1.0), v1.assign_add(global_step, increment))
        summary_op = v1.summary.merge([tf.raw_ops.ScalarSummary(tags="w", values=weight)])
        scaffold = v1.train.Scaffold(saver=v1.train.Saver(max_to_keep=100))
        clock = StepClock()
        if ours:
            hooks = [
                StopAtStepHook(clock, last_step=LAST_STEP),
                CheckpointSaverHook(clock, str(directory), save_steps=EVERY, scaffold=scaffold),
                SummarySaverHook(clock, save_steps=EVERY, output_dir=str(directory / "s"), summary_op=summary_op),
                StepCounterHook(clock, every_n_steps=EVERY, output_dir=str(directory / "c")),
            ]
        else:
            saver = v1.train.CheckpointSaverHook(str(directory), save_steps=EVERY, scaffold=scaffold)
            saver._set_steps_per_run(1)
            hooks = [
                v1.train.StopAtStepHook(last_step=LAST_STEP),
                saver,
                v1.train.SummarySaverHook(save_steps=EVERY, output_dir=str(directory / "s"), summary_op=summary_op),
                v1.train.StepCounterHook(every_n_steps=EVERY, output_dir=str(directory / "c")),
            ]
        creator = v1.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=str(directory))
        runs = 0
        with v1.train.MonitoredSession(session_creator=creator, hooks=hooks) as session:
            while not session.should_stop() and runs < RUN_LIMIT:
                session.run(train_op)
                runs += 1
            final = session.run_step_fn(lambda step_context: step_context.session.run(global_step))
    v1.summary.FileWriterCache.clear()
    checkpoints = tf.train.get_checkpoint_state(str(directory))
    return {
        "runs": runs,
        "final": int(final),
        "checkpoints": sorted(int(path.rsplit("-", 1)[1]) for path in checkpoints.all_model_checkpoint_paths),
        "summaries": _event_steps(directory / "s", "w"),
        "rates": _event_steps(directory / "c", "global_step/sec"),
        "switched": clock.switched if ours else None,
    }


def _event_steps(directory: Path, tag: str) -> list[int]:
    steps = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in v1.train.summary_iterator(str(path)):
            steps += [event.step for value in event.summary.value if value.tag == tag]
    return steps


def test_counting_matches_tensorflows_hooks_exactly(tmp_path):
    """One global step per run (what hookrun builds): same stops, checkpoints, summaries and rates as TensorFlow."""
    theirs = _run(tmp_path / "tf", 1, ours=False)
    ours = _run(tmp_path / "ours", 1, ours=True)
    assert theirs["final"] == LAST_STEP  # the reference itself behaves as expected
    assert theirs["checkpoints"] == [0, 5, 10, 15, 20, 23]
    same = ("runs", "final", "checkpoints", "rates")
    assert {k: ours[k] for k in same} == {k: theirs[k] for k in same}
    assert ours["switched"] is False
    # Summaries: the first step, then every EVERY steps after the last write (SecondOrStepTimer's rule).
    # TensorFlow's hook applies the rule to a read of global_step that races the train op's increment
    # (value before or after it), so its writes land EVERY - 1 or EVERY steps apart; the count does not race.
    assert ours["summaries"] == [1, 6, 11, 16, 21]
    assert theirs["summaries"][0] == 1
    written = theirs["summaries"]
    assert all(EVERY - 1 <= b - a <= EVERY for a, b in zip(written, written[1:], strict=False))


def test_a_train_op_that_adds_two_switches_the_clock_to_reading(tmp_path):
    """The first confirming read disagrees with the count; from then on the hooks follow the value read."""
    theirs = _run(tmp_path / "tf", 2, ours=False)
    ours = _run(tmp_path / "ours", 2, ours=True)
    assert ours["switched"] is True  # after the first run: the clock checks its count there
    assert theirs["final"] == 24  # the first global step >= LAST_STEP
    assert theirs["checkpoints"] == [0, 6, 12, 18, 24]  # a save once EVERY global steps have passed
    same = ("runs", "final", "checkpoints", "rates")  # these hooks re-read global_step before they act
    assert {k: ours[k] for k in same} == {k: theirs[k] for k in same}
    # Summaries: once reading, both hooks decide on a read of global_step fetched in the same run as
    # the train op, so it races the increment (the value before or after it), as in TensorFlow.
    # Both write the first step (2, checked by the clock's first read) and then follow the timer rule
    # on whichever value was read. Ours writes at the exact step (read after the run): the next
    # write is the first run whose racing read reaches last + EVERY, so 6 or 8 steps later.
    # TensorFlow's writes at the racing value itself, which widens its gaps to 4..10 steps.
    assert ours["summaries"][0] == theirs["summaries"][0] == 2
    assert all(b - a in (6, 8) for a, b in zip(ours["summaries"], ours["summaries"][1:], strict=False))
    assert all(4 <= b - a <= 10 for a, b in zip(theirs["summaries"], theirs["summaries"][1:], strict=False))
    assert all(step % 2 == 0 and step <= theirs["final"] for step in ours["summaries"])


def test_a_train_op_that_never_moves_global_step_never_stops_on_steps(tmp_path):
    """As TensorFlow's hooks: no stop, no checkpoint after the first; the clock stops believing its count."""
    theirs = _run(tmp_path / "tf", 0, ours=False)
    ours = _run(tmp_path / "ours", 0, ours=True)
    assert ours["runs"] == theirs["runs"] == RUN_LIMIT
    assert ours["final"] == theirs["final"] == 0
    assert ours["checkpoints"] == theirs["checkpoints"] == [0]
    assert ours["switched"] is True


class _Context:
    """A stand-in for ``SessionRunContext``: the clock only uses its identity and ``session``."""

    def __init__(self, session):
        self.session = session


def test_the_clock_reads_once_per_session_and_moves_once_per_run():
    graph = tf.Graph()
    with graph.as_default():
        global_step = v1.train.get_or_create_global_step()
        bump = v1.assign_add(global_step, 1)
        clock = StepClock()
        clock.begin()
        clock.begin()  # idempotent: one read tensor per graph
        assert len([op for op in graph.get_operations() if op.type == "Identity"]) == 1
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            session.run(v1.assign(global_step, 7))
            assert clock.sync(session) == 7
            session.run(v1.assign(global_step, 9))
            assert clock.sync(session) == 7  # same session: no second read
            session.run(v1.assign(global_step, 7))
            assert clock.request() is None  # counting: the hooks ask for nothing
            assert not clock.switched
            for expected in (8, 9):  # the first run is checked with a read: it agrees
                session.run(bump)
                context = _Context(session)
                assert clock.next_step == expected
                assert clock.advance(context) == expected
                assert clock.advance(context) == expected  # a second hook in the same run: no double count
                assert clock.confirm(context) == expected
            assert not clock.switched
            session.run(bump)
            session.run(bump)  # a run the clock did not see
            context = _Context(session)
            assert clock.advance(context) == 10
            assert clock.confirm(context) == 11
            assert clock.switched and clock.reading
            assert clock.request().fetches is clock.tensor
            assert clock.advance(_Context(session), read=11) == 12  # reading: the value read plus one
            assert clock.final(session) == 11  # end: the exact value, whatever the clock said
            session.run(bump)
            assert clock.final(session) == 11  # a second hook's end: the same read, not another
            clock.advance(_Context(session), read=11)
            assert clock.final(session) == 12  # after another run: read again


def test_hooks_ask_for_nothing_while_the_clock_counts():
    """``before_run`` returns None while the clock counts (the point of the clock); the read once it reads."""
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        clock = StepClock()
        hook = StopAtStepHook(clock, last_step=1000)
        hook.begin()
        assert hook.before_run(None) is None
        clock.reading = True
        assert hook.before_run(None).fetches is clock.tensor


#: A graph builder with its own train op that adds 2 to ``global_step`` per run (a custom schedule).
ADDS_TWO_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    loss = tf.identity(tf.reduce_mean(tf.square(tf.matmul(features, w) - labels)), name="loss")
    if params["mode"] != "train":
        return {"loss": loss}
    with tf.control_dependencies([v1.train.GradientDescentOptimizer(1e-5).minimize(loss)]):
        train_op = v1.assign_add(v1.train.get_global_step(), 2)
    return {"loss": loss, "train_op": train_op}
"""


def test_history_progress_and_evaluation_follow_the_clock_when_the_train_op_adds_two(
    make_config, run_train, write_module, captured
):
    """hookrun's own step-driven hooks share the clock: their steps are global steps read, not runs counted."""
    builder = write_module("adds_two", ADDS_TWO_BUILDER)
    result = run_train(
        make_config(
            graph={"builder": f"{builder}:build"},
            data={"validation_split": 0.3},
            hooks=[
                {"type": "stop_at_step", "last_step": 20},
                {"type": "evaluation", "every_n_steps": 4},
                {"type": "history_saver", "every_n_step": 5},
                {"type": "progress_bar"},
            ],
        )
    )
    # Once reading, stop_at_step decides on a read that races the train op's increment (as
    # TensorFlow's StopAtStepHook does): it stops at 20, or one run later at 22.
    final = result.final_global_step
    assert final in (20, 22)
    history = [row["step"] for row in result.history]
    evaluations = [evaluation["step"] for evaluation in result.evaluations]
    for steps in (history, evaluations):
        assert steps == sorted(set(steps))
        assert all(step % 2 == 0 for step in steps)  # exact global steps (each run adds 2), never run counts
        assert steps[-1] == final  # end: the exact final global step
    assert len(history) >= 4  # a row per multiple of 5 reached (5, 10, 15, 20) and the end's
    assert f"Training {final}/20" in captured.text
    assert "training ended at step" not in captured.text  # the bar knows the run reached its total


def test_the_call_order_is_checked() -> None:
    """begin -> sync -> advance -> confirm holds by check, not only by docstring (issue 13, item 4)."""
    from hookrun.hooks.step_clock import ClockOrderError

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.train.get_or_create_global_step()
        clock = StepClock(0)
        with pytest.raises(ClockOrderError, match="sync before StepClock.begin"):
            clock.sync(object())
        clock.begin()
        with pytest.raises(ClockOrderError, match="advance before StepClock.sync"):
            clock.advance(object())
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            assert clock.sync(session) == 0
            run = SimpleNamespace(session=session)
            with pytest.raises(ClockOrderError, match="has not advanced past"):
                clock.confirm(run)


def test_a_step_moved_after_the_clocks_read_is_not_blamed_on_the_train_op():
    """A hook's after_create_session that runs after the clock's read (pretrained weights, global_step
    included) moves global_step: the first run's check takes the new value without switching, and checks
    again after the next run; a train op that really adds two is still caught there."""
    graph = tf.Graph()
    with graph.as_default():
        global_step = v1.train.get_or_create_global_step()
        add_one, add_two = v1.assign_add(global_step, 1), v1.assign_add(global_step, 2)
        clock = StepClock()
        clock.begin()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            assert clock.sync(session) == 0
            session.run(v1.assign(global_step, 40))  # a later hook's after_create_session
            session.run(add_one)
            assert clock.advance(_Context(session)) == 41  # the check read it: the exact value
            assert not clock.switched
            session.run(add_one)
            assert clock.advance(_Context(session)) == 42  # counted, checked once more: it agrees
            assert not clock.switched
        with v1.Session() as session:  # a new session whose train op adds two
            session.run(v1.global_variables_initializer())
            assert clock.sync(session) == 0
            session.run(add_two)
            assert clock.advance(_Context(session)) == 2 and not clock.switched  # one disagreement: not yet
            session.run(add_two)
            assert clock.advance(_Context(session)) == 4
            assert clock.switched and clock.reading  # the second check disagrees too: the train op
