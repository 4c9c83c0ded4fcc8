"""The roles of a cluster's tasks: a training task (the chief or another worker) and a parameter server.

Both follow TensorFlow's between-graph replication (:mod:`hookrun.runner.cluster`): this module only
answers the trainer's questions from the task's :class:`~hookrun.runner.cluster.plan.ClusterPlan` and
hands the TensorFlow work to :class:`hookrun.runner.cluster.session.ClusterRun` (the server, the
placement, the sessions, the chief's shutdown), created once TensorFlow is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from hookrun.common.errors import SetupError
from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.runner.cluster.plan import ClusterPlan, check_addresses
from hookrun.runner.graph.run_config import RunInfo, make_run_info
from hookrun.runner.roles.base import Role, SessionSetup
from hookrun.runner.roles.placement import Placement, device_placement

if TYPE_CHECKING:
    from hookrun.runner.cluster.session import ClusterRun


class _ClusterRole(Role):
    """What every task of a cluster shares: the plan, the pre-TensorFlow checks, per-task file names."""

    shares_global_step = True
    keeps_input_state = False

    def __init__(self, plan: ClusterPlan) -> None:
        self.plan = plan

    @property
    def is_chief(self) -> bool:  # type: ignore[override]
        """Whether this task is the chief (``chief:0``, or ``worker:0`` without a ``chief`` job)."""
        return self.plan.is_chief

    @property
    def task(self) -> str:  # type: ignore[override]
        """``worker:1``."""
        return str(self.plan.task)

    @property
    def task_label(self) -> str:  # type: ignore[override]
        """``worker1``."""
        return self.plan.task.label

    @property
    def training_tasks(self) -> list[str]:
        """The chief (if the cluster names one) and every worker, the chief first."""
        return [str(t) for t in self.plan.training_tasks]

    @property
    def notes(self) -> list[str]:
        """The plan's lines for the user (where the cluster came from)."""
        return self.plan.notes

    def check(self, config: RunConfigBase) -> None:
        """Refuse ``session.steps_per_run`` > 1, then probe the addresses (a port in use, an unreachable ps).

        Raises:
            SetupError: either (exit 2), before TensorFlow loads.
        """
        if config.session.steps_per_run > 1:
            raise SetupError(
                f"session.steps_per_run: {config.session.steps_per_run} does not run on a cluster (TF_CONFIG or "
                "`cluster:`): between-graph replication runs one step per session call; set session.steps_per_run: 1"
            )
        check_addresses(self.plan)

    def runs(self, hook: HookConfig) -> bool:
        """``chief_only`` hooks run on the chief alone (:meth:`ClusterPlan.runs`)."""
        return self.plan.runs(hook)

    def task_file(self, name: str) -> str:
        """``name`` on the chief, ``history-worker1.csv`` on another task (:meth:`ClusterPlan.task_file`)."""
        return self.plan.task_file(name)


class ClusterTaskRole(_ClusterRole):
    """A training task of a ``ps``/``worker`` cluster: the chief or another worker.

    Its placement is ``replica_device_setter`` around the device plan (variables on the parameter servers,
    ``SyncReplicasOptimizer`` with ``cluster.sync_replicas``), its session is TensorFlow's
    ``MonitoredSession`` on the task's server (whatever ``session.engine`` says), and its finish is the
    cluster's end-of-run protocol: the chief stops the other workers and shuts the parameter servers
    down; another worker tells the chief it stopped.

    Args:
        plan: the cluster and this task (a worker or the chief, not a ps).
        cluster_run: the task's :class:`~hookrun.runner.cluster.session.ClusterRun`; None: made when first
            needed (TensorFlow loaded).
    """

    def __init__(self, plan: ClusterPlan, cluster_run: ClusterRun | None = None) -> None:
        super().__init__(plan)
        self._cluster_run = cluster_run

    @property
    def cluster_run(self) -> ClusterRun:
        """The task's server, placement, sessions and shutdown (imports TensorFlow on first use)."""
        if self._cluster_run is None:
            from hookrun.runner.cluster.session import ClusterRun

            self._cluster_run = ClusterRun(self.plan)
        return self._cluster_run

    def input_context(self, tf: Any) -> Any:
        """``tf.distribute.InputContext`` of this task (:func:`hookrun.runner.data.input_fn.input_context`)."""
        from hookrun.runner.data.input_fn import input_context

        return input_context(tf, self.plan)

    def batches_done(self, initial_step: int) -> int:
        """Each training task trained about ``1 / tasks`` of the batches that moved ``global_step``."""
        return initial_step // len(self.plan.training_tasks)

    def placement(self, tf: Any, config: RunConfigBase) -> Placement:
        """The device plan with ``replica_device_setter`` and, with ``sync_replicas``, the optimizer wrapper."""
        run = self.cluster_run
        return device_placement(tf, config, run.device_function(), run.wrap_optimizer())

    def run_info(self, config: RunConfigBase, directory: Path, tf: Any, placement: Placement) -> RunInfo:
        """Estimator's ``RunConfig`` of this task: the cluster spec, the task, ``is_chief``, the ``ConfigProto``."""
        return make_run_info(
            config, directory, cluster=self.plan, tf=tf, session_config=placement.session_config(tf, config)
        )

    def session_setup(
        self,
        tf: Any,
        config: RunConfigBase,
        placement: Placement,
        *,
        hooks: list[Any],
        scaffold: Any,
        directory: Path,
        console: Console,
        graph: Any,
    ) -> SessionSetup:
        """Start the task's server (waiting for every ps), then the ``MonitoredSession`` factory on it.

        The ``ConfigProto``'s ``device_filters`` keep the task to the parameter servers and itself.
        """
        run = self.cluster_run
        config_proto = run.configure(placement.session_config(tf, config))
        run.start(config_proto, console)
        with graph.as_default():
            factory = run.session_factory(hooks, scaffold, directory, config_proto)
        return SessionSetup(config_proto, factory)

    def finish(self, completed: bool, directory: Path) -> list[str]:
        """The chief stops the other tasks; a worker tells the chief it stopped (:meth:`ClusterRun.finish`).

        The run directory's temporary files are left alone: other workers may still be writing.
        """
        if self._cluster_run is None:  # ended before the graph was placed: no server, nothing to signal
            return []
        return self._cluster_run.finish(completed)


class ParameterServerRole(_ClusterRole):
    """A ``ps`` task: it serves the variables until the chief's run finishes and trains nothing."""

    trains = False

    def serve(self, console: Console, verbose: bool = False) -> float:
        """Serve until the chief finishes (:func:`hookrun.runner.cluster.servers.serve_ps`); the seconds served."""
        from hookrun.runner.cluster.servers import serve_ps

        return serve_ps(self.plan, console, verbose)

    def placement(self, tf: Any, config: RunConfigBase) -> Placement:
        """Raises ``NotImplementedError``: a parameter server builds no training graph."""
        raise NotImplementedError("a parameter server builds no training graph")

    def run_info(self, config: RunConfigBase, directory: Path, tf: Any, placement: Placement) -> RunInfo:
        """Raises ``NotImplementedError``: a parameter server builds no training graph."""
        raise NotImplementedError("a parameter server builds no training graph")

    def session_setup(self, tf: Any, config: RunConfigBase, placement: Placement, **kwargs: Any) -> SessionSetup:
        """Raises ``NotImplementedError``: a parameter server runs no training session."""
        raise NotImplementedError("a parameter server runs no training session")

    def finish(self, completed: bool, directory: Path) -> list[str]:
        """Nothing: the chief's done-queue ends a parameter server (:meth:`serve` returns then)."""
        return []
