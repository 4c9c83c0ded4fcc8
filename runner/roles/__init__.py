"""A run's role: what kind of process it is, and every answer the trainer needs that depends on it.

- :class:`~hookrun.runner.roles.local.LocalRole`: one process, on one device or on towers;
- :class:`~hookrun.runner.roles.cluster_task.ClusterTaskRole`: the chief or another worker of a cluster;
- :class:`~hookrun.runner.roles.cluster_task.ParameterServerRole`: a ``ps`` task (serves, trains nothing).

Each answers :class:`~hookrun.runner.roles.base.Role`'s questions (is it the chief, which hooks run here,
where the ops go, how the session is created, what the finish does); its device placement is a
:class:`~hookrun.runner.roles.placement.Placement` (the device plan, towers included, and a cluster's
device function). :func:`resolve_role` picks the role before TensorFlow loads.
"""

from __future__ import annotations

from collections.abc import Mapping

from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.runner.cluster.plan import resolve_cluster
from hookrun.runner.roles.base import Role, SessionSetup
from hookrun.runner.roles.cluster_task import ClusterTaskRole, ParameterServerRole
from hookrun.runner.roles.local import LocalRole
from hookrun.runner.roles.placement import Placement, device_placement


def resolve_role(config: RunConfigBase, task: str | None = None, environ: Mapping[str, str] | None = None) -> Role:
    """The role of this process, from ``cluster:`` or ``TF_CONFIG`` and ``--task`` (no TensorFlow).

    Args:
        config: the run config (its ``cluster:`` section).
        task: ``--task``, e.g. ``worker:1``; None: ``TF_CONFIG``'s task.
        environ: the environment ``TF_CONFIG`` is read from (default ``os.environ``).

    Returns:
        :class:`LocalRole` without a cluster; :class:`ParameterServerRole` for a ``ps`` task;
        :class:`ClusterTaskRole` for the chief and the other workers.

    Raises:
        SetupError: a bad ``--task``, ``TF_CONFIG`` or ``cluster:`` (see
            :func:`hookrun.runner.cluster.plan.resolve_cluster`).
    """
    plan = resolve_cluster(config.cluster, task, environ)
    if plan is None:
        return LocalRole()
    if plan.is_ps:
        return ParameterServerRole(plan)
    return ClusterTaskRole(plan)


__all__ = [
    "ClusterTaskRole",
    "LocalRole",
    "ParameterServerRole",
    "Placement",
    "Role",
    "SessionSetup",
    "device_placement",
    "resolve_role",
]
