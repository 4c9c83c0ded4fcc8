"""``hookrun train CONFIG --local-cluster ps=1,worker=2``: a whole cluster as child processes on 127.0.0.1.

Each task is ``hookrun train CONFIG --task JOB:I`` (the other flags passed through) with the
standard ``TF_CONFIG`` describing the cluster on free loopback ports. Every line a task prints is
shown with its task first (``[worker1] ...``). The children run in their own process group, so
Ctrl-C reaches the launcher only, which hands it on in order: SIGINT to the chief and the workers
(each finishes its step and runs every hook's ``end``; the chief then shuts the parameter servers
down), a second Ctrl-C kills every task. When a task fails, its message is repeated and every
other task is stopped the same way (SIGTERM to the training tasks, then to the parameter servers,
then SIGKILL). No task outlives the launcher, even when it is killed with ``kill -9``: on Linux each
child gets SIGTERM when the launcher dies (``PR_SET_PDEATHSIG``), and every child also watches a pipe
whose write end only the launcher holds: at its end of file (the launcher is gone, however it ended)
the child stops as on SIGTERM and, if still running :data:`LAUNCHER_GONE_GRACE_SECS` later, exits at
once. The children share one process group, which the launcher kills last.

On Linux the tasks run in a private network namespace (``runner/netns.py``): TensorFlow's gRPC
servers listen on all interfaces, and there only the tasks themselves can reach them. Where the OS
does not allow one, the launcher warns that the ports are open.

Imports no TensorFlow: the launcher only starts, watches and stops processes.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hookrun.common.errors import SetupError
from hookrun.runner.cluster import netns
from hookrun.runner.cluster.netns import PrivateNetwork
from hookrun.runner.cluster.plan import TF_CONFIG_VAR, Task

#: ``ps=1,worker=2[,chief=1]``.
SPEC_PATTERN = re.compile(r"^\s*(chief|worker|ps)\s*=\s*([0-9]+)\s*$")
#: Seconds the training tasks get to stop (finish the step, save) before the parameter servers are stopped.
STOP_GRACE_SECS = 20.0
#: Seconds a task gets after SIGTERM before SIGKILL.
KILL_GRACE_SECS = 5.0
#: Most tasks of a local cluster: each is a TensorFlow process (a few hundred MB, 2-4 s to start).
MAX_LOCAL_TASKS = 32
#: The environment variable naming, in a task, the pipe whose end of file means the launcher is gone.
LAUNCHER_FD_VAR = "HOOKRUN_LAUNCHER_FD"
#: Seconds a task whose launcher is gone gets to stop (finish its step, save) before it exits at once.
LAUNCHER_GONE_GRACE_SECS = 3.0


def parse_spec(text: str) -> dict[str, int]:
    """``ps=1,worker=2`` -> ``{"ps": 1, "worker": 2}``.

    Raises:
        SetupError: not a comma-separated list of ``job=count`` (chief, worker, ps), or no ps or
            no worker, or more than one chief, or more than :data:`MAX_LOCAL_TASKS` tasks.
    """
    counts: dict[str, int] = {}
    for part in text.split(","):
        match = SPEC_PATTERN.match(part)
        if match is None or match.group(1) in counts:
            raise SetupError(
                f"--local-cluster {text!r}: expected job=count pairs separated by commas, each job once, "
                "e.g. ps=1,worker=2 (jobs: chief, worker, ps)"
            )
        digits = match.group(2).lstrip("0") or "0"
        counts[match.group(1)] = int(digits) if len(digits) <= 6 else 10**6  # any such count is too many
    if counts.get("ps", 0) < 1 or counts.get("worker", 0) + counts.get("chief", 0) < 1:
        raise SetupError(f"--local-cluster {text!r}: needs at least ps=1 and worker=1")
    if counts.get("chief", 0) > 1:
        raise SetupError(f"--local-cluster {text!r}: there is at most one chief (chief=1)")
    if sum(counts.values()) > MAX_LOCAL_TASKS:
        raise SetupError(
            f"--local-cluster {text!r}: more than {MAX_LOCAL_TASKS} tasks; one machine runs at most {MAX_LOCAL_TASKS} "
            "(each task is a TensorFlow process); use fewer, or a real cluster (`cluster:` or TF_CONFIG)"
        )
    return {job: n for job, n in counts.items() if n > 0}


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 now (held open together while chosen)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def local_jobs(counts: dict[str, int]) -> dict[str, list[str]]:
    """The cluster on loopback: job -> ``127.0.0.1:<free port>`` per task."""
    ports = iter(free_ports(sum(counts.values())))
    return {job: [f"127.0.0.1:{next(ports)}" for _ in range(n)] for job, n in counts.items()}


def _prepare_child(parent: int, libc: Any, network: PrivateNetwork | None) -> None:
    """In the child before exec: SIGTERM when the launcher dies (Linux), stop if it already has, join the network."""
    if libc is not None:
        try:
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except AttributeError:
            pass
    if os.getppid() != parent:
        os._exit(1)
    if network is not None:
        network.join(libc)


def watch_launcher(environ: Mapping[str, str] | None = None) -> bool:
    """In a task of a local cluster: stop when the launcher is gone, however it ended (``kill -9`` too).

    Reads the pipe named by ``HOOKRUN_LAUNCHER_FD`` in a daemon thread. At its end of file the task
    sends itself SIGTERM (it finishes its step and saves, as on SIGTERM) and, if it still runs
    :data:`LAUNCHER_GONE_GRACE_SECS` later (blocked on a parameter server that went with the
    launcher), exits at once with 143; the kernel then releases its run lock.

    Returns:
        Whether a launcher is being watched (False outside a local cluster).
    """
    text = (os.environ if environ is None else environ).get(LAUNCHER_FD_VAR, "")
    try:
        fd = int(text)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):  # not the launcher's pipe (a stray variable)
            return False
    except (ValueError, OSError):
        return False

    def watch() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(LAUNCHER_GONE_GRACE_SECS)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="hookrun-launcher-watch", daemon=True).start()
    return True


@dataclass
class Child:
    """One task's process and what it printed last."""

    task: Task
    process: subprocess.Popen[str]
    last_errors: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=5))
    readers: list[threading.Thread] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        """``[worker1] ``: what starts each of its lines."""
        return f"[{self.task.label}] "

    @property
    def training(self) -> bool:
        """Whether the task runs training steps (not a ps)."""
        return self.task.job != "ps"


class LocalCluster:
    """Start, watch and stop the tasks of a loopback cluster.

    Args:
        config: the config file.
        counts: tasks per job (from :func:`parse_spec`).
        child_args: further ``hookrun train`` arguments for every task (``--set``, ``--run-dir``, ...).
        out, err: where the tasks' stdout and stderr lines go.
        python: the interpreter that runs hookrun.
    """

    def __init__(
        self,
        config: Path,
        counts: dict[str, int],
        child_args: Sequence[str] = (),
        out: IO[str] | None = None,
        err: IO[str] | None = None,
        python: str = sys.executable,
    ) -> None:
        self.config = config
        self.counts = counts
        self.child_args = list(child_args)
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.python = python
        self.jobs = local_jobs(counts)
        self.children: list[Child] = []
        self._lock = threading.Lock()
        self._signals: list[int] = []
        self._group: int | None = None
        self._launcher_pipe: tuple[int, int] | None = None
        self.network: PrivateNetwork | None = None
        self.network_note = ""

    @property
    def chief(self) -> Task:
        """``chief:0`` with a chief job, else ``worker:0``."""
        return Task("chief", 0) if "chief" in self.jobs else Task("worker", 0)

    def _say(self, text: str, stream: IO[str] | None = None) -> None:
        with self._lock:
            target = stream or self.err
            target.write(text + "\n")
            target.flush()

    def _pump(self, child: Child, pipe: IO[str], stream: IO[str], errors: bool) -> None:
        for line in pipe:
            line = line.rstrip("\n")
            if errors and line.strip():
                child.last_errors.append(line.strip())
            self._say(line if line.startswith(child.prefix) else child.prefix + line, stream)
        pipe.close()

    def start(self) -> None:
        """Start every task: the parameter servers first, then the chief, then the other workers."""
        width = shutil.get_terminal_size((120, 24)).columns
        order = [Task("ps", i) for i in range(self.counts.get("ps", 0))]
        order += [Task("chief", 0)] if "chief" in self.jobs else []
        order += [Task("worker", i) for i in range(self.counts.get("worker", 0))]
        parent = os.getpid()
        linux = sys.platform.startswith("linux")
        libc = ctypes.CDLL(None, use_errno=True) if linux else None
        self.network, self.network_note = netns.start(self.python)
        self._launcher_pipe = os.pipe()  # only the launcher ever holds the write end
        read_end = self._launcher_pipe[0]

        def spawn(task: Task, network: PrivateNetwork | None) -> subprocess.Popen[str]:
            env = dict(os.environ)
            env[TF_CONFIG_VAR] = json.dumps({"cluster": self.jobs, "task": {"type": task.job, "index": task.index}})
            env["PYTHONUNBUFFERED"] = "1"
            env["COLUMNS"] = str(max(80, width - len(task.label) - 3))
            env[LAUNCHER_FD_VAR] = str(read_end)
            command = [self.python, "-m", "hookrun.cli.app", "train", str(self.config), "--task", str(task)]
            return subprocess.Popen(
                command + self.child_args,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                bufsize=1,
                pass_fds=(read_end,),
                process_group=self._group or 0,  # one group, not the launcher's: Ctrl-C reaches the launcher only
                preexec_fn=(lambda: _prepare_child(parent, libc, network)) if linux else None,
            )

        for task in order:
            try:
                process = spawn(task, self.network)
            except subprocess.SubprocessError as err:
                if self.network is None or self.children:
                    raise
                self.network.close()  # the namespace was made but cannot be joined (a seccomp filter)
                self.network, self.network_note = None, f"its tasks could not join it: {err}"
                process = spawn(task, None)
            if not self.children:
                self._say(network_message(self))
            if self._group is None:
                self._group = process.pid
            child = Child(task, process)
            self._say(f"started {task} at {self.jobs[task.job][task.index]} (pid {process.pid})")
            for pipe, stream, errors in ((process.stdout, self.out, False), (process.stderr, self.err, True)):
                reader = threading.Thread(target=self._pump, args=(child, pipe, stream, errors), daemon=True)
                reader.start()
                child.readers.append(reader)
            self.children.append(child)
        os.close(read_end)  # the tasks have it
        self._launcher_pipe = (-1, self._launcher_pipe[1])

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals.append(signum)

    def _send(self, children: Sequence[Child], signum: int) -> None:
        for child in children:
            if child.process.poll() is None:
                try:
                    child.process.send_signal(signum)
                except ProcessLookupError:
                    pass

    def _wait(self, children: Sequence[Child], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if all(c.process.poll() is not None for c in children):
                return True
            time.sleep(0.05)
        return all(c.process.poll() is not None for c in children)

    def stop(self, first: int = signal.SIGTERM, grace: float = STOP_GRACE_SECS) -> None:
        """Stop every task still running: ``first`` to the training tasks, then SIGTERM to the ps, then SIGKILL."""
        training = [c for c in self.children if c.training]
        servers = [c for c in self.children if not c.training]
        self._send(training, first)
        self._wait(training, grace)
        self._send(servers, signal.SIGTERM)
        if not self._wait(self.children, KILL_GRACE_SECS):
            self._send(self.children, signal.SIGKILL)
            self._wait(self.children, KILL_GRACE_SECS)

    def _release(self) -> None:
        """Kill whatever is left in the children's process group, close the launcher pipe, end the namespace."""
        if self._group is not None:
            try:
                os.killpg(self._group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self._launcher_pipe is not None:
            for fd in self._launcher_pipe:
                if fd >= 0:
                    os.close(fd)
            self._launcher_pipe = None
        if self.network is not None:
            self.network.close()

    def run(self) -> int:
        """Start the cluster and watch it until the chief's run is over; return the exit code.

        Returns:
            The chief's exit code; a failing task's own (or 1 when killed by a signal); 130/143 when
            interrupted.
        """
        handlers: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                handlers[signum] = signal.signal(signum, self._on_signal)
        try:
            self.start()
            return self._watch()
        finally:
            self.stop(signal.SIGTERM, grace=KILL_GRACE_SECS)
            self._release()
            for child in self.children:
                for reader in child.readers:
                    reader.join(timeout=2.0)
            for signum, handler in handlers.items():
                signal.signal(signum, handler)

    def _watch(self) -> int:
        chief = next(c for c in self.children if c.task == self.chief)
        forwarded = 0
        while True:
            if len(self._signals) > forwarded:
                forwarded = len(self._signals)
                if forwarded == 1:
                    self._say("stopping the cluster: each worker finishes its step, the chief saves")
                    self._send([c for c in self.children if c.training], self._signals[0])
                else:
                    self._send(self.children, signal.SIGKILL)
                    return 128 + self._signals[0]
            for child in self.children:
                code = child.process.poll()
                if code is None or code == 0 or (self._signals and code in (130, 143)):
                    continue
                for reader in child.readers:
                    reader.join(timeout=1.0)
                why = child.last_errors[-1] if child.last_errors else "no message"
                how = f"exit code {code}" if code > 0 else f"killed by signal {-code}"
                self._say(f"error: task {child.task} failed ({how}): {why}")
                self._say("stopping the other tasks")
                self.stop(signal.SIGTERM)
                return code if 0 < code < 128 else 1
            if chief.process.poll() is not None:
                # The chief is done and has told the others; give them time to stop on their own.
                if not self._wait(self.children, STOP_GRACE_SECS):
                    late = ", ".join(str(c.task) for c in self.children if c.process.poll() is None)
                    self._say(f"note: {late} still running {STOP_GRACE_SECS:g} s after the chief finished; stopping")
                code = chief.process.returncode
                if self._signals and code == 0:
                    return 128 + self._signals[0]
                return code
            time.sleep(0.1)


def run_local_cluster(config: Path, spec: str, child_args: Sequence[str] = ()) -> int:
    """Run ``config`` on a loopback cluster described by ``spec`` (``ps=1,worker=2``); return the exit code.

    Raises:
        SetupError: a malformed ``spec`` (exit 2).
    """
    cluster = LocalCluster(config, parse_spec(spec), child_args)
    tasks = ", ".join(f"{job}={len(addresses)}" for job, addresses in cluster.jobs.items())
    print(f"local cluster {tasks} on 127.0.0.1 (chief: {cluster.chief})", file=sys.stderr, flush=True)
    return cluster.run()


def network_message(cluster: LocalCluster) -> str:
    """What the launcher says about its tasks' gRPC ports once they have started."""
    if cluster.network is not None:
        return "the tasks run in a private network namespace: only they can reach their gRPC ports"
    ports = ", ".join(address.rpartition(":")[2] for addresses in cluster.jobs.values() for address in addresses)
    return (
        f"warning: TensorFlow's gRPC servers listen on ALL interfaces (ports {ports}) and run any graph sent to "
        f"them, unauthenticated; a private network namespace was not possible ({cluster.network_note}), so "
        "anyone who can reach this machine can run code as you: firewall these ports (see docs/security.md)"
    )
