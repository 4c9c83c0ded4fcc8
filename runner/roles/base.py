"""The interface every role of a run answers: :class:`Role`, and what it hands the session phase.

The training phases (:mod:`hookrun.runner.training`) ask a run's role every question that depends on
whether the process runs alone or as a task of a TensorFlow cluster: is it the chief, where do the ops go,
which hooks run here, how is the session created, what happens once it closes. They never test for a
cluster or for towers themselves. No TensorFlow is imported here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from hookrun.config_schemas.hook_base import HookConfig
from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.runner.graph.run_config import RunInfo
from hookrun.runner.roles.placement import Placement


@dataclass(frozen=True)
class SessionSetup:
    """How the session phase creates this run's session.

    Attributes:
        config: the session's ``tf.compat.v1.ConfigProto`` (a TensorFlow object).
        factory: a callable creating the ``MonitoredSession`` (call it with the graph as default), or None:
            the ``session.engine`` the config names creates its own session.
    """

    config: Any
    factory: Callable[[], Any] | None = None


class Role(ABC):
    """What kind of process this run is, and everything the trainer asks that depends on it.

    One subclass per kind of run: :class:`~hookrun.runner.roles.local.LocalRole` (one process),
    :class:`~hookrun.runner.roles.cluster_task.ClusterTaskRole` (the chief or another worker of a
    ``ps``/``worker`` cluster), :class:`~hookrun.runner.roles.cluster_task.ParameterServerRole` (a ``ps``
    task, which serves and trains nothing). Device placement (one device or towers, and a cluster's
    device function) is the role's :class:`~hookrun.runner.roles.placement.Placement`.

    Attributes:
        is_chief: this process restores, initialises and writes the run directory (its checkpoints, its
            ``config.yaml``, ``summary.json``), runs ``chief_only`` hooks and a model_fn's
            ``training_chief_hooks`` (``MonitoredTrainingSession``'s ``is_chief``).
        trains: this process runs training steps (False: a parameter server, see :meth:`serve`).
        task: the task as the user writes it, ``worker:1``; None in one process.
        task_label: the task in file names and output prefixes, ``worker1``; None in one process.
        shares_global_step: other processes move ``global_step`` too: the hooks' step clock reads it with
            every step instead of counting, and a step is no fraction of this process's epoch.
        keeps_input_state: a ``data.input_fn``'s position can be saved with the checkpoints (False on a
            cluster: each worker's iterator lives on its worker while the chief saves).
        training_tasks: the training tasks sharing the data (``chief:0``, ``worker:0``, ...), the chief
            first; empty in one process.
        notes: lines for the user about the role (where the cluster came from).
    """

    is_chief: bool = True
    trains: bool = True
    task: str | None = None
    task_label: str | None = None
    shares_global_step: bool = False
    keeps_input_state: bool = True

    @property
    def training_tasks(self) -> list[str]:
        """The training tasks that share the data, the chief first; empty in one process."""
        return []

    @property
    def notes(self) -> list[str]:
        """Lines for the user about the role."""
        return []

    def check(self, config: RunConfigBase) -> None:  # noqa: B027 - a hook with nothing to check by default
        """Refuse, before TensorFlow loads, a config this role cannot run (nothing to refuse by default).

        Raises:
            SetupError: the config or the addresses do not fit this role (exit 2).
        """

    def serve(self, console: Console, verbose: bool = False) -> float:
        """Serve until the run ends, for a role that does not train (:attr:`trains` False).

        Returns:
            The seconds served.

        Raises:
            NotImplementedError: this role trains.
        """
        raise NotImplementedError(f"{type(self).__name__} trains; it serves nothing")

    def runs(self, hook: HookConfig) -> bool:
        """Whether a ``hooks:`` entry runs in this process (a ``chief_only`` hook on the chief alone)."""
        return self.is_chief or not hook.chief_only

    def task_file(self, name: str) -> str:
        """A run-directory file name for this process: ``name`` on the chief, ``history-worker1.csv`` elsewhere."""
        return name

    def input_context(self, tf: Any) -> Any:
        """The ``tf.distribute.InputContext`` this process's input reads its shard by, or None in one process."""
        return None

    def batches_done(self, initial_step: int) -> int:
        """The batches this process's pipeline has trained by ``global_step`` ``initial_step`` (it skips them)."""
        return initial_step

    @abstractmethod
    def placement(self, tf: Any, config: RunConfigBase) -> Placement:
        """Where this process's training graph goes: the device plan (one device or towers) and its device function.

        Args:
            tf: the ``tensorflow`` module.
            config: the run config.

        Raises:
            SetupError: a GPU is asked for and none is there.
        """

    @abstractmethod
    def run_info(self, config: RunConfigBase, directory: Path, tf: Any, placement: Placement) -> RunInfo:
        """A model_fn's (and input_fn's) ``config``: Estimator's ``RunConfig`` of this run and process."""

    @abstractmethod
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
        """The session's ``ConfigProto`` and, where the role creates it, the session factory.

        Called once the run directory is written, right before the session phase runs.

        Args:
            tf: the ``tensorflow`` module.
            config: the run config.
            placement: from :meth:`placement`.
            hooks: the ``SessionRunHook`` instances the session runs, in order.
            scaffold: the session's ``Scaffold``.
            directory: the run directory (the checkpoint directory).
            console: where waiting for other tasks is reported.
            graph: the training ``tf.Graph`` (the factory's ops are built in it).
        """

    @abstractmethod
    def finish(self, completed: bool, directory: Path) -> list[str]:
        """End this process's part once the session has closed (on success and on failure).

        Args:
            completed: the session closed normally (a stop, the end of the data, or a signal).
            directory: the run directory.

        Returns:
            Lines for the user.
        """
