"""Config of the ``cluster:`` section: parameter-server training on TensorFlow's gRPC runtime. No TensorFlow.

The addresses (``ps``, ``worker``, optional ``chief``) may instead come from the standard
``TF_CONFIG`` environment variable; the settings here apply either way. Which task a process is
comes from ``hookrun train --task worker:1`` or ``TF_CONFIG``'s ``task``
(see :mod:`hookrun.runner.cluster.plan`).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import Count, Seconds

#: ``host:port``; the host a name, IPv4 address or bracketed IPv6 address.
ADDRESS_PATTERN = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.\-_]*[A-Za-z0-9])?):(\d{1,5})$")
#: The jobs hookrun runs, in the order they are listed.
JOBS = ("chief", "worker", "ps")


def check_address(address: str) -> str:
    """Return ``address`` if it is ``host:port`` with a port in 1..65535.

    Raises:
        ValueError: with the form expected.
    """
    match = ADDRESS_PATTERN.match(address)
    if match is None or not 1 <= int(match.group(3)) <= 65535:
        raise ValueError(f"{address!r} is not an address of the form host:port (port 1-65535), e.g. 10.0.0.5:2222")
    return address


class SyncReplicasConfig(StrictModel):
    """Synchronous training with ``tf.compat.v1.train.SyncReplicasOptimizer``."""

    replicas_to_aggregate: Count | None = Field(
        default=None,
        description="Gradients aggregated into each update (count); default: the number of training workers "
        "(chief included). Stale gradients are dropped.",
    )


class ClusterConfig(StrictModel):
    """Tasks of a TensorFlow cluster and how hookrun runs on it (``tf.compat.v1.train.Server``)."""

    chief: list[str] = Field(
        default_factory=list,
        description="The chief's address (`host:port`, or a list of one); without one, worker 0 is the chief.",
    )
    worker: list[str] = Field(
        default_factory=list,
        description="Worker addresses (`host:port`), task 0 first; each trains on its shard of the rows.",
    )
    ps: list[str] = Field(
        default_factory=list,
        description="Parameter-server addresses (`host:port`); the variables are spread over them.",
    )
    recovery_wait_secs: Seconds = Field(
        default=1.0,
        description="How often a non-chief worker checks whether the chief's session is ready (seconds); "
        "TensorFlow's own default is 30.",
    )
    max_wait_secs: Seconds = Field(
        default=600.0,
        description="How long a task waits for the parameter servers and, on a non-chief worker, for the "
        "chief to initialize the variables before failing (seconds).",
    )
    shutdown_timeout_secs: Seconds = Field(
        default=10.0,
        description="When the chief finishes: how long it waits for the other workers to stop before "
        "telling the parameter servers to shut down (seconds).",
    )
    sync_replicas: SyncReplicasConfig | None = Field(
        default=None,
        description="Synchronous training (tf.compat.v1.train.SyncReplicasOptimizer); default asynchronous.",
    )

    @field_validator("chief", mode="before")
    @classmethod
    def _chief_as_list(cls, value: Any) -> Any:
        """``chief: host:port`` is a list of one."""
        return [value] if isinstance(value, str) else value

    @field_validator("chief", "worker", "ps")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        for address in value:
            check_address(address)
        return value

    @model_validator(mode="after")
    def _shape(self) -> ClusterConfig:
        if len(self.chief) > 1:
            raise ValueError("`chief` is one task: give one address")
        seen: set[str] = set()
        for job in JOBS:
            for address in getattr(self, job):
                if address in seen:
                    raise ValueError(f"address {address} is given to two tasks; every task needs its own port")
                seen.add(address)
        if self.has_addresses and not self.ps:
            raise ValueError("`ps` needs at least one address: the variables live on the parameter servers")
        if self.has_addresses and not (self.worker or self.chief):
            raise ValueError("`worker` needs at least one address")
        return self

    @property
    def has_addresses(self) -> bool:
        """The section lists tasks (else the addresses must come from ``TF_CONFIG``)."""
        return bool(self.chief or self.worker or self.ps)

    def jobs(self) -> dict[str, list[str]]:
        """The addresses per job, as ``tf.train.ClusterSpec`` takes them (empty jobs left out)."""
        return {job: list(getattr(self, job)) for job in JOBS if getattr(self, job)}
