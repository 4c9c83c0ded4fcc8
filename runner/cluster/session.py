"""One training task's run on a TensorFlow cluster: server, placement, sessions, and the chief's shutdown.

The sessions are the ones ``tf.compat.v1.train.MonitoredTrainingSession`` builds, assembled here
so that a non-chief worker can poll for the chief's session every ``recovery_wait_secs``
(TensorFlow 2.21's ``MonitoredTrainingSession`` exposes no such setting: its
``WorkerSessionCreator`` uses ``SessionManager``'s fixed 30 s):

- the chief: ``MonitoredSession(ChiefSessionCreator(scaffold, master, config, checkpoint_dir), hooks)``;
- another worker: ``MonitoredSession(WorkerSessionCreator(...), hooks)`` where the creator calls
  ``SessionManager(..., recovery_wait_secs=...).wait_for_session(master, config, max_wait_secs)``.

Both are recoverable sessions: an ``AbortedError`` or ``UnavailableError`` (a parameter server
lost) closes the session and creates a new one; the chief restores the latest checkpoint, every
hook's ``after_create_session`` runs again.

The hooks are the configured ones in their order, without ``chief_only`` hooks on the other
workers; hookrun appends at most two of its own, after them: ``SyncReplicasOptimizer``'s hook
(with ``cluster.sync_replicas``) and, on the non-chief workers, :class:`ChiefDoneHook`, which
stops the worker once the chief has finished.

Ending the run (:meth:`ClusterRun.finish`): FIFO queues on the parameter servers carry the
signals. The chief, once its session has closed, enqueues a token on ``hookrun_stop`` (ps 0);
each other worker sees it at its next step, finishes that step, closes its session (every hook's
``end`` runs) and enqueues its index on ``hookrun_worker_done``; the chief waits for those
(``shutdown_timeout_secs``), then enqueues on each parameter server's ``done_queue_<i>``, which
the parameter server (:func:`hookrun.runner.cluster.servers.serve_ps`) is blocked dequeuing: it exits.

This module imports TensorFlow; the runner imports it only for a cluster run.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tensorflow as tf

from hookrun.runner.cluster.plan import ClusterPlan, Task, wait_for_ps
from hookrun.runner.cluster.servers import control_queue, done_queue, start_server
from hookrun.runner.graph.build import EVAL_SCOPE

#: With ``sync_replicas``: how long closing the chief's session waits for ``SyncReplicasOptimizer``'s queue
#: runner (seconds). Once the chief stops, the round it waits for can never be completed (the chief is one of
#: the replicas), so it only ends when the session closes; ``MonitoredTrainingSession`` would wait 120 s.
SYNC_STOP_GRACE_SECS = 2.0


class WorkerSessionCreator(tf.compat.v1.train.SessionCreator):
    """``tf.compat.v1.train.WorkerSessionCreator`` with a configurable ``recovery_wait_secs``.

    Creates a session on ``master`` and waits until the chief has initialized (or restored) the
    variables, checking every ``recovery_wait_secs`` seconds, for at most ``max_wait_secs``.
    """

    def __init__(self, scaffold: Any, master: str, config: Any, max_wait_secs: float, recovery_wait_secs: float):
        self._scaffold = scaffold
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs
        self._recovery_wait_secs = recovery_wait_secs
        self._session_manager: Any = None

    def create_session(self) -> Any:
        """Finalize the graph, then wait for the chief's session (``SessionManager.wait_for_session``)."""
        self._scaffold.finalize()
        if self._session_manager is None:
            self._session_manager = tf.compat.v1.train.SessionManager(
                local_init_op=self._scaffold.local_init_op,
                local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=tf.compat.v1.get_default_graph(),
                recovery_wait_secs=self._recovery_wait_secs,
            )
        return self._session_manager.wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs
        )


class ChiefDoneHook(tf.compat.v1.train.SessionRunHook):
    """On a non-chief worker: request a stop once the chief has finished.

    Reads the size of the chief's stop queue with every step (one more fetch in the same
    ``Session.run``), and once when a session is created (a worker started after the chief
    finished stops before its first step).
    """

    def __init__(self, stop_size: Any) -> None:
        self._stop_size = stop_size

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Stop at once if the chief has already finished."""
        if session.run(self._stop_size) > 0:
            coord.request_stop()

    def before_run(self, run_context: Any) -> Any:
        """Fetch the stop queue's size with the step."""
        return tf.compat.v1.train.SessionRunArgs(self._stop_size)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Request a stop when the chief has finished."""
        if run_values.results > 0:
            run_context.request_stop()


class ClusterRun:
    """The part of one training task (the chief or another worker) in a cluster run.

    Args:
        plan: the cluster and this task (a worker or the chief, not a ps).

    Attributes:
        plan: the plan.
        server: the ``tf.distribute.Server``, once :meth:`start` ran.
        sync_optimizer: the ``SyncReplicasOptimizer`` with ``cluster.sync_replicas``, once the graph is built.
    """

    def __init__(self, plan: ClusterPlan) -> None:
        self.plan = plan
        self.server: Any = None
        self.sync_optimizer: Any = None
        self._graph: Any = None
        self._stop_size: Any = None
        self._signal_stop: Any = None
        self._acknowledge: Any = None
        self._take_acknowledgement: Any = None
        self._ps_done: list[Any] = []
        self._release_tokens: Any = None
        self._config: Any = None

    # ------------------------------------------------------------------ setup

    @property
    def label(self) -> str:
        """``worker1``."""
        return self.plan.task.label

    def configure(self, config: Any) -> Any:
        """A copy of the session ``ConfigProto`` whose ``device_filters`` keep this task to the ps and itself."""
        configured = tf.compat.v1.ConfigProto()
        configured.CopyFrom(config)
        configured.device_filters.extend(["/job:ps", self.plan.task.device])
        return configured

    def start(self, config: Any, console: Any = None) -> None:
        """Start this task's server and wait until every parameter server listens."""
        self._config = config
        self.server = start_server(tf, self.plan, config)
        wait_for_ps(self.plan, console)

    def device_function(self) -> Callable[[Any], str]:
        """Op placement: ``replica_device_setter`` (variables round-robin on the ps tasks, the rest here).

        The evaluation part (``evaluation/...``: its iterator and streaming-metric variables) stays
        on this task, so two tasks never share its local state.
        """
        spec = tf.train.ClusterSpec(self.plan.jobs)
        chooser = tf.compat.v1.train.replica_device_setter(cluster=spec, worker_device=self.plan.task.device)
        local = tf.DeviceSpec.from_string(self.plan.task.device)
        prefix = EVAL_SCOPE + "/"

        def place(op: Any) -> str:
            if op.name.startswith(prefix):
                return local.make_merged_spec(tf.DeviceSpec.from_string(op.device or "")).to_string()
            return chooser(op)

        return place

    def wrap_optimizer(self) -> Callable[[Any], Any] | None:
        """With ``cluster.sync_replicas``: a function wrapping the optimizer in ``SyncReplicasOptimizer``."""
        sync = self.plan.settings.sync_replicas
        if sync is None:
            return None
        replicas = len(self.plan.training_tasks)

        def wrap(optimizer: Any) -> Any:
            with _quiet_deprecations():
                sync_optimizer = tf.compat.v1.train.SyncReplicasOptimizer(
                    optimizer,
                    replicas_to_aggregate=sync.replicas_to_aggregate or replicas,
                    total_num_replicas=replicas,
                )
            apply_gradients = sync_optimizer.apply_gradients

            def quiet_apply_gradients(*args: Any, **kwargs: Any) -> Any:
                with _quiet_deprecations():  # it builds a QueueRunner, deprecated too
                    return apply_gradients(*args, **kwargs)

            sync_optimizer.apply_gradients = quiet_apply_gradients
            self.sync_optimizer = sync_optimizer
            return sync_optimizer

        return wrap

    # ------------------------------------------------------------------ session

    def _build_control_ops(self) -> None:
        """The queue ops of the end-of-run protocol (before the graph is finalized)."""
        self._graph = tf.compat.v1.get_default_graph()
        with tf.device("/job:ps/task:0"):
            stop_queue = control_queue("hookrun_stop")
            ack_queue = control_queue("hookrun_worker_done")
            self._stop_size = stop_queue.size()
            self._signal_stop = stop_queue.enqueue(1)
            self._acknowledge = ack_queue.enqueue(self.plan.task.index)
            self._take_acknowledgement = ack_queue.dequeue()
        for index in range(self.plan.num_ps):
            with tf.device(f"/job:ps/task:{index}"):
                self._ps_done.append(done_queue(index).enqueue(1))
        if self.sync_optimizer is not None and self.plan.is_chief and self.plan.other_workers:
            # Tokens that let a worker blocked in a synchronous step finish it after the chief is gone.
            self._release_tokens = self.sync_optimizer.get_init_tokens_op(len(self.plan.other_workers))

    def session_factory(self, hooks: list[Any], scaffold: Any, checkpoint_dir: Path, config: Any) -> Callable[[], Any]:
        """A callable creating this task's ``MonitoredSession`` (call it with the graph as default).

        The hooks run in the given order, then ``SyncReplicasOptimizer``'s hook (synchronous
        training) and, on a non-chief worker, :class:`ChiefDoneHook`.
        """

        def create() -> Any:
            self._build_control_ops()
            all_hooks = list(hooks)
            if self.sync_optimizer is not None:
                all_hooks.append(self.sync_optimizer.make_session_run_hook(self.plan.is_chief))
            if self.plan.is_chief:
                creator = tf.compat.v1.train.ChiefSessionCreator(
                    scaffold=scaffold, master=self.server.target, config=config, checkpoint_dir=str(checkpoint_dir)
                )
            else:
                all_hooks.append(ChiefDoneHook(self._stop_size))
                creator = WorkerSessionCreator(
                    scaffold,
                    self.server.target,
                    config,
                    max_wait_secs=self.plan.settings.max_wait_secs,
                    recovery_wait_secs=self.plan.settings.recovery_wait_secs,
                )
            if self.sync_optimizer is None:
                return tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=all_hooks)
            _quiet_cancelled_queue_runners()
            return tf.compat.v1.train.MonitoredSession(
                session_creator=creator, hooks=all_hooks, stop_grace_period_secs=SYNC_STOP_GRACE_SECS
            )

        return create

    # ------------------------------------------------------------------ end of the run

    def finish(self, completed: bool) -> list[str]:
        """End this task's part: the chief stops the others and shuts the ps down; a worker reports it stopped.

        Args:
            completed: the session closed normally (a stop, the end of the data, or a signal). A
                worker that failed does not report; the chief ends the cluster either way.

        Returns:
            Lines for the user.
        """
        if self._graph is None or self.server is None:
            return []
        with tf.compat.v1.Session(self.server.target, graph=self._graph, config=self._config) as session:
            if self.plan.is_chief:
                return self._shut_down_cluster(session)
            if completed:
                try:
                    session.run(self._acknowledge, options=_timeout(5.0))
                except tf.errors.OpError:
                    return ["could not tell the chief this worker stopped (ps 0 unreachable)"]
        return []

    def _shut_down_cluster(self, session: Any) -> list[str]:
        notes: list[str] = []
        waiting = {t.index for t in self.plan.other_workers}
        deadline = time.monotonic() + self.plan.settings.shutdown_timeout_secs
        try:
            session.run(self._signal_stop, options=_timeout(5.0))
        except tf.errors.OpError:
            notes.append("could not signal the other workers to stop (ps:0 unreachable)")
            deadline = 0.0  # nobody will report back: go on to the parameter servers
        next_release = 0.0
        try:
            while waiting and time.monotonic() < deadline:
                if self._release_tokens is not None and time.monotonic() >= next_release:
                    next_release = time.monotonic() + 0.5
                    try:
                        session.run(self._release_tokens, options=_timeout(1.0))
                    except tf.errors.OpError:  # the token queue is closed: no worker is waiting on it
                        self._release_tokens = None
                try:
                    waiting.discard(int(session.run(self._take_acknowledgement, options=_timeout(0.5))))
                except tf.errors.DeadlineExceededError:
                    continue
        except tf.errors.OpError as err:
            notes.append(f"stopping the other workers failed: {type(err).__name__}")
        except KeyboardInterrupt:
            notes.append("stopped waiting for the other workers (interrupted)")
        job = self.plan.other_workers[0].job if self.plan.other_workers else "worker"
        if waiting:
            missing = ", ".join(str(Task(job, i)) for i in sorted(waiting))
            notes.append(
                f"{missing} did not confirm its stop within {self.plan.settings.shutdown_timeout_secs:g} s "
                "(cluster.shutdown_timeout_secs)"
            )
        stopped = len(self.plan.other_workers) - len(waiting)
        shut = 0
        for index, op in enumerate(self._ps_done):
            try:
                session.run(op, options=_timeout(5.0))
                shut += 1
            except tf.errors.OpError:
                notes.append(f"ps:{index} could not be told to shut down (unreachable)")
        notes.insert(0, f"cluster: {stopped} other worker(s) stopped, {shut} ps task(s) shut down")
        return notes


@contextlib.contextmanager
def _quiet_deprecations() -> Iterator[None]:
    """Hide the ``tensorflow`` logger's warnings (``SyncReplicasOptimizer``'s deprecation notices) for a moment."""
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _quiet_cancelled_queue_runners() -> None:
    """Drop the traceback of a queue-runner thread cancelled by its session's close (``sync_replicas``).

    ``SyncReplicasOptimizer``'s queue runner is still blocked when the chief's session closes after
    :data:`SYNC_STOP_GRACE_SECS`; the close cancels it with a ``CancelledError`` that the thread
    would print. Any other exception in any thread is printed as before.
    """
    previous = threading.excepthook
    if getattr(previous, "_hookrun_quiet", False):
        return

    def hook(args: Any) -> None:
        name = args.thread.name if args.thread is not None else ""
        if issubclass(args.exc_type, tf.errors.CancelledError) and name.startswith("QueueRunnerThread-"):
            return
        previous(args)

    hook._hookrun_quiet = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _timeout(seconds: float) -> Any:
    return tf.compat.v1.RunOptions(timeout_in_ms=max(1, int(seconds * 1000)))

