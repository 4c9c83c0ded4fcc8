"""Parameter-server training on TensorFlow's own gRPC runtime: the cluster, this task's role, its checks.

What hookrun does here is TensorFlow's documented between-graph replication, nothing of its own:
``tf.train.ClusterSpec`` and ``tf.distribute.Server`` per task, variables placed with
``tf.compat.v1.train.replica_device_setter``, a ``MonitoredSession`` per worker whose chief
restores and initializes (``ChiefSessionCreator``) while the others wait for it
(``SessionManager.wait_for_session``). The servers and the queues through which the chief ends
the run are in :mod:`hookrun.runner.cluster.servers`, the sessions in :mod:`hookrun.runner.cluster.session`;
both import this module, never the other way.

This module never imports TensorFlow, so a bad ``--task``, a port already in use or an
unreachable host is reported (exit 2) before TensorFlow loads.

Roles:

- ``ps:i`` serves variables: it starts its server and waits on its done-queue
  (``shared_name="done_queue_<i>"``) until the chief's run finishes (:func:`hookrun.runner.cluster.servers.serve_ps`).
- the chief (``chief:0``, or ``worker:0`` when there is no ``chief`` job) restores from and writes
  the run directory and runs the ``chief_only`` hooks;
- every other worker trains on its shard of the rows and writes only its own files, with the task
  in the name (``history-worker1.csv``, ``summary-worker1.json``).
"""

from __future__ import annotations

import concurrent.futures
import errno
import json
import os
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hookrun.common.errors import SetupError
from hookrun.common.files import task_file_name
from hookrun.config_schemas.cluster import JOBS, ClusterConfig, check_address

#: The environment variable TensorFlow reads the cluster and this task from.
TF_CONFIG_VAR = "TF_CONFIG"
#: ``--task`` form.
TASK_PATTERN = re.compile(r"^\s*(chief|worker|ps)\s*:\s*(\d+)\s*$")
#: Seconds a reachability probe of another task waits for an answer.
PROBE_TIMEOUT_SECS = 3.0


@dataclass(frozen=True)
class Task:
    """One task of the cluster: ``job`` (chief, worker or ps) and ``index``."""

    job: str
    index: int

    def __str__(self) -> str:
        return f"{self.job}:{self.index}"

    @property
    def label(self) -> str:
        """``worker1``: the task in file names and output prefixes."""
        return f"{self.job}{self.index}"

    @property
    def device(self) -> str:
        """``/job:worker/task:1``."""
        return f"/job:{self.job}/task:{self.index}"


def parse_task(text: str) -> Task:
    """``worker:1`` -> ``Task("worker", 1)``.

    Raises:
        SetupError: not of the form ``chief:0``, ``worker:N`` or ``ps:N``.
    """
    match = TASK_PATTERN.match(text)
    if match is None:
        raise SetupError(f"--task {text!r}: expected JOB:INDEX with JOB chief, worker or ps, e.g. --task worker:1")
    return Task(match.group(1), int(match.group(2)))


@dataclass
class ClusterPlan:
    """The cluster and this process's task in it (no TensorFlow).

    Attributes:
        jobs: job -> addresses (``chief``, ``worker``, ``ps``; empty jobs left out).
        task: this process's task.
        settings: the ``cluster:`` settings (defaults when the config has no section).
        source: where the addresses came from: ``cluster`` (the config) or ``TF_CONFIG``.
        notes: lines for the user.
    """

    jobs: dict[str, list[str]]
    task: Task
    settings: ClusterConfig = field(default_factory=ClusterConfig)
    source: str = "cluster"
    notes: list[str] = field(default_factory=list)

    @property
    def chief_task(self) -> Task:
        """``chief:0`` when the cluster has a chief job, else ``worker:0``."""
        return Task("chief", 0) if self.jobs.get("chief") else Task("worker", 0)

    @property
    def is_chief(self) -> bool:
        """Whether this task restores, initializes and writes the run directory."""
        return self.task == self.chief_task

    @property
    def is_ps(self) -> bool:
        """Whether this task is a parameter server."""
        return self.task.job == "ps"

    @property
    def training_tasks(self) -> list[Task]:
        """Tasks that run training steps: the chief first, then the other workers."""
        tasks = [Task("chief", 0)] if self.jobs.get("chief") else []
        return tasks + [Task("worker", i) for i in range(len(self.jobs.get("worker", [])))]

    @property
    def other_workers(self) -> list[Task]:
        """The training tasks other than the chief."""
        return [t for t in self.training_tasks if t != self.chief_task]

    @property
    def num_ps(self) -> int:
        """Parameter servers (count)."""
        return len(self.jobs.get("ps", []))

    @property
    def replica(self) -> int:
        """The position of this training task in :attr:`training_tasks` (its data shard)."""
        return self.training_tasks.index(self.task)

    def address(self, task: Task | None = None) -> str:
        """``host:port`` of ``task`` (default: this task)."""
        task = task or self.task
        return self.jobs[task.job][task.index]

    def where(self, task: Task | None = None) -> str:
        """Where a task's address is written, for messages: ``cluster.worker[1]`` or ``TF_CONFIG cluster.worker[1]``."""
        task = task or self.task
        prefix = "TF_CONFIG " if self.source == "TF_CONFIG" else ""
        return f"{prefix}cluster.{task.job}[{task.index}]"

    def task_file(self, name: str) -> str:
        """A run-directory file name for this task: unchanged on the chief, ``history-worker1.csv`` elsewhere."""
        return task_file_name(name, None if self.is_chief else self.task.label)

    def runs(self, hook: Any) -> bool:
        """Whether a ``hooks:`` entry runs on this task (``chief_only`` hooks run on the chief alone)."""
        return self.is_chief or not getattr(hook, "chief_only", False)


def read_tf_config(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The parsed ``TF_CONFIG``, or None when unset or empty.

    Raises:
        SetupError: not a JSON object, or its ``cluster``/``task`` have the wrong shape.
    """
    text = environ.get(TF_CONFIG_VAR, "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise SetupError(f"{TF_CONFIG_VAR} is not valid JSON ({err.msg} at character {err.pos})") from None
    if not isinstance(value, dict):
        raise SetupError(f'{TF_CONFIG_VAR} must be a JSON object like {{"cluster": {{...}}, "task": {{...}}}}')
    cluster = value.get("cluster")
    if cluster is not None and (
        not isinstance(cluster, dict)
        or not all(isinstance(v, list) and all(isinstance(a, str) for a in v) for v in cluster.values())
    ):
        raise SetupError(f'{TF_CONFIG_VAR}: "cluster" must map each job to a list of "host:port" addresses')
    task = value.get("task")
    if task is not None and (
        not isinstance(task, dict) or not isinstance(task.get("type"), str) or not isinstance(task.get("index", 0), int)
    ):
        raise SetupError(f'{TF_CONFIG_VAR}: "task" must be like {{"type": "worker", "index": 1}}')
    return value


def _jobs_from_tf_config(cluster: dict[str, list[str]]) -> dict[str, list[str]]:
    """The chief, worker and ps jobs of ``TF_CONFIG``'s cluster, checked like a ``cluster:`` section."""
    unknown = sorted(set(cluster) - set(JOBS) - {"evaluator"})
    if unknown:
        raise SetupError(
            f"{TF_CONFIG_VAR}: job {unknown[0]!r} is not one hookrun runs (it runs chief, worker and ps tasks)"
        )
    try:
        checked = ClusterConfig(**{job: cluster.get(job, []) for job in JOBS})
    except ValueError as err:  # pydantic's ValidationError is a ValueError
        errors = getattr(err, "errors", None)
        message = errors()[0]["msg"].removeprefix("Value error, ") if callable(errors) else str(err)
        raise SetupError(f"{TF_CONFIG_VAR} cluster: {message}") from None
    if not checked.has_addresses:
        raise SetupError(f'{TF_CONFIG_VAR}: "cluster" lists no tasks')
    return checked.jobs()


def resolve_cluster(
    config: ClusterConfig | None, task: str | None, environ: Mapping[str, str] | None = None
) -> ClusterPlan | None:
    """The cluster and this process's task, or None to train in one process.

    The addresses come from ``TF_CONFIG``'s ``cluster`` when it is set (the environment describes
    the deployment; the config's ``cluster:`` addresses are then ignored, with a note), else from
    the config's ``cluster:`` section. The task is ``--task`` when given, else ``TF_CONFIG``'s
    ``task``. No addresses anywhere means no cluster.

    Args:
        config: the config's ``cluster:`` section, or None.
        task: the ``--task`` value (``worker:1``), or None.
        environ: the environment (default ``os.environ``).

    Raises:
        SetupError (exit 2): a malformed ``TF_CONFIG`` or ``--task``, ``--task`` without a cluster,
            a cluster without a task, or a task that is not in the cluster.
    """
    environ = os.environ if environ is None else environ
    tf_config = read_tf_config(environ)
    settings = config or ClusterConfig()
    notes: list[str] = []
    if tf_config is not None and tf_config.get("cluster"):
        jobs = _jobs_from_tf_config(tf_config["cluster"])
        source = "TF_CONFIG"
        if settings.has_addresses:
            notes.append(f"cluster addresses from {TF_CONFIG_VAR}; the config's cluster: addresses are ignored")
            settings = settings.model_copy(update={"chief": [], "worker": [], "ps": []})
    elif settings.has_addresses:
        jobs, source = settings.jobs(), "cluster"
    else:
        if task is not None:
            raise SetupError(
                f"--task {task} given, but no cluster is configured: add a `cluster:` section "
                f"(ps: [...], worker: [...]) or set {TF_CONFIG_VAR}"
            )
        return None
    if task is not None:
        chosen = parse_task(task)
        given = f"--task {task.strip()}"
    elif tf_config is not None and isinstance(tf_config.get("task"), dict):
        spec = tf_config["task"]
        chosen, given = Task(str(spec["type"]), int(spec.get("index", 0))), f"{TF_CONFIG_VAR} task"
    else:
        raise SetupError(
            "training on a cluster needs this process's task: pass --task worker:N (or ps:N, chief:0), "
            f'or set {TF_CONFIG_VAR}\'s "task"'
        )
    if chosen.job not in JOBS:
        raise SetupError(f"{given}: job {chosen.job!r} is not one hookrun runs (chief, worker or ps)")
    if chosen.index >= len(jobs.get(chosen.job, [])):
        listed = ", ".join(str(Task(job, i)) for job in JOBS for i in range(len(jobs.get(job, []))))
        raise SetupError(f"{given}: {chosen} is not in the cluster (its tasks: {listed})")
    return ClusterPlan(jobs=jobs, task=chosen, settings=settings, source=source, notes=notes)


def _split(address: str) -> tuple[str, int]:
    host, _, port = check_address(address).rpartition(":")
    return host.strip("[]"), int(port)


def _resolves(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return True


def port_in_use(port: int) -> bool:
    """Whether something on this machine already listens on ``port`` (TensorFlow's server binds every interface)."""
    for family, any_host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            probe.bind((any_host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return True
        finally:
            probe.close()
    return False


def probe(address: str, timeout: float = PROBE_TIMEOUT_SECS) -> str | None:
    """Why ``address`` cannot be reached, or None when it answers or refuses (a task not started yet).

    Returns:
        None (reachable: connected, or the host refused the port), else a short reason.
    """
    host, port = _split(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return None
    except socket.gaierror:
        return "the host name does not resolve"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as err:
        return err.strerror or str(err)


def check_addresses(plan: ClusterPlan, timeout: float = PROBE_TIMEOUT_SECS) -> None:
    """Check, before TensorFlow loads, that this task can start and reach the parameter servers.

    - this task's host resolves and its port is free on this machine;
    - a worker: every ps host resolves and answers (a refused port is fine: that task has not
      started yet; no answer or no route is an error).

    Raises:
        SetupError (exit 2): one line naming the task, its address and the reason.
    """
    host, port = _split(plan.address())
    if not _resolves(host):
        raise SetupError(f"{plan.where()} {plan.address()}: host {host!r} does not resolve; fix the address")
    if port_in_use(port):
        raise SetupError(
            f"{plan.where()} {plan.address()}: port {port} is already in use on this machine "
            f"(another task or program); give {plan.task} another port"
        )
    if plan.is_ps:
        return
    peers = [Task("ps", i) for i in range(plan.num_ps)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(peers))) as pool:
        reasons = list(pool.map(lambda t: probe(plan.address(t), timeout), peers))
    for peer, reason in zip(peers, reasons, strict=True):
        if reason is not None:
            raise SetupError(f"{plan.where(peer)} {plan.address(peer)}: {peer} is unreachable ({reason})")


def wait_for_ps(plan: ClusterPlan, console: Any = None) -> None:
    """Wait until every parameter server accepts connections (at most ``max_wait_secs``).

    Creating the first session before the parameter servers listen makes TensorFlow re-create it
    (and call every hook's ``after_create_session``) once per failed attempt; waiting here avoids that.

    Raises:
        SetupError: a parameter server did not come up in time.
    """
    deadline = time.monotonic() + plan.settings.max_wait_secs
    told = False
    for index in range(plan.num_ps):
        ps = Task("ps", index)
        host, port = _split(plan.address(ps))
        while True:
            try:
                with socket.create_connection((host, port), timeout=1.0):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SetupError(
                        f"{plan.where(ps)} {plan.address(ps)}: {ps} did not start within "
                        f"{plan.settings.max_wait_secs:g} s (cluster.max_wait_secs)"
                    ) from None
                if console is not None and not told:
                    console.print(f"[{plan.task.label}] waiting for {ps} at {plan.address(ps)}", markup=False,
                                  highlight=False)
                    told = True
                time.sleep(0.2)

