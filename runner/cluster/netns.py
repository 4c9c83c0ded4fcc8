"""A private network namespace for ``--local-cluster``: its gRPC ports reachable by its own tasks only.

TensorFlow's gRPC server listens on all interfaces: ``GrpcServer::Init`` binds
``0.0.0.0:<port>`` whatever the cluster spec's host is, and neither ``ServerDef`` nor
``ConfigProto``/``RPCOptions`` offers a bind address. The server runs any graph sent to it, without
authentication. So on Linux the local cluster runs in a network namespace of its own, holding only a
loopback interface: the tasks reach each other on 127.0.0.1 as before, and nothing outside the
namespace (another machine, or another process on this one) can reach their ports.

How: a small *holder* process is started in a new network namespace (``unshare(CLONE_NEWNET)``;
without root, inside a new user namespace too, mapping the user's own uid and gid, as
``unshare --net --map-current-user`` does); it brings ``lo`` up and waits until the launcher goes.
Each task then joins the holder's namespaces before it starts (``setns``, in ``preexec_fn``). Where
the OS does not allow it (not Linux, user namespaces disabled, a seccomp filter), :func:`start`
says why and the launcher warns that the ports are open.

Imports no TensorFlow.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass

#: ``CLONE_NEWNET`` and ``CLONE_NEWUSER`` from ``<sched.h>``.
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
#: ``SIOCGIFFLAGS``/``SIOCSIFFLAGS`` and ``IFF_UP`` from ``<linux/sockios.h>``/``<net/if.h>``.
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
#: Set to ``0`` to run the local cluster without a private network namespace (its ports open).
DISABLE_VAR = "HOOKRUN_LOCAL_CLUSTER_NETNS"

#: The holder: waits until the launcher closes its stdin (or dies), then exits.
_HOLDER = "import os\nwhile os.read(0, 1):\n    pass\n"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _loopback_up() -> None:
    """Bring ``lo`` up in the current network namespace (``ip link set lo up``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _enter_new_namespace(uid: int, gid: int, libc: ctypes.CDLL) -> None:
    """In the holder before exec: a new network namespace (and user namespace without root), ``lo`` up."""
    if uid == 0 and libc.unshare(CLONE_NEWNET) == 0:
        _loopback_up()
        return
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNET), "unshare(CLONE_NEWUSER | CLONE_NEWNET)")
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/setgroups", "deny\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    _loopback_up()


@dataclass
class PrivateNetwork:
    """A network namespace holding only ``lo``, kept alive by its holder process.

    Attributes:
        holder: the holder process (its stdin is the launcher's; closing it ends the holder).
        user_namespace: whether the namespace sits in a user namespace of its own (no root), which
            a task joins first.
    """

    holder: subprocess.Popen[bytes]
    user_namespace: bool

    def join(self, libc: ctypes.CDLL) -> None:
        """In a task before exec: join the holder's namespaces.

        Raises:
            OSError: ``setns`` failed (the task then does not start; the launcher reports it).
        """
        pid = self.holder.pid
        kinds = (("user", CLONE_NEWUSER), ("net", CLONE_NEWNET)) if self.user_namespace else (("net", CLONE_NEWNET),)
        for kind, flag in kinds:
            fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                _check(libc.setns(fd, flag), f"setns({kind})")
            finally:
                os.close(fd)

    def close(self) -> None:
        """End the holder (the namespace goes when its last task has gone too)."""
        if self.holder.stdin is not None:
            self.holder.stdin.close()
        try:
            self.holder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.holder.kill()
            self.holder.wait()


def start(python: str = sys.executable) -> tuple[PrivateNetwork | None, str]:
    """Start a private network namespace for the local cluster's tasks.

    Args:
        python: the interpreter that runs the holder.

    Returns:
        ``(network, "")``, or ``(None, why)`` where the OS does not allow one (not Linux, no
        permission, user namespaces disabled) or ``HOOKRUN_LOCAL_CLUSTER_NETNS=0`` turns it off.
    """
    if not sys.platform.startswith("linux"):
        return None, f"network namespaces are Linux only (this is {sys.platform})"
    if os.environ.get(DISABLE_VAR, "1").strip() == "0":
        return None, f"{DISABLE_VAR}=0"
    libc = _libc()
    uid, gid = os.geteuid(), os.getegid()
    parent = os.getpid()

    def prepare() -> None:
        libc.prctl(1, 15)  # PR_SET_PDEATHSIG: SIGTERM when the launcher dies
        if os.getppid() != parent:
            os._exit(1)
        _enter_new_namespace(uid, gid, libc)

    try:
        holder = subprocess.Popen(
            [python, "-c", _HOLDER], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=prepare, process_group=0,
        )
    except (subprocess.SubprocessError, OSError) as err:
        return None, f"this system does not allow a private network namespace ({err})"
    own = os.readlink("/proc/self/ns/user")
    try:
        theirs = os.readlink(f"/proc/{holder.pid}/ns/user")
    except OSError as err:  # the holder is already gone
        holder.kill()
        holder.wait()
        reason = errno.errorcode.get(err.errno or 0, str(err))
        return None, f"the namespace holder ended at once ({reason})"
    return PrivateNetwork(holder, user_namespace=theirs != own), ""
