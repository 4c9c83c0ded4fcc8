"""``RunConfig`` and ``TF_CONFIG``: mirrors ``tf.estimator.RunConfig`` (TF 1.15, ``estimator/run_config.py``).

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

_USE_DEFAULT = object()

#: TensorFlow 1.15's defaults when neither ``save_checkpoints_steps`` nor ``save_checkpoints_secs`` is given.
DEFAULT_SAVE_CHECKPOINTS_SECS = 600

#: ``RunConfig(...)`` arguments hookrun accepts and ignores, as TF 1.15 names them (they had no effect off a
#: TPU or a parameter-server cluster that hookrun runs on its own terms).
_ACCEPTED = ("keep_checkpoint_every_n_hours", "protocol", "experimental_max_worker_delay_secs",
             "session_creation_timeout_secs")


class TaskType:
    """``tf.estimator.RunConfig``'s task types (``tensorflow_estimator.python.estimator.run_config.TaskType``)."""

    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


def read_tf_config(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``TF_CONFIG`` environment variable as a dict (``{}`` when unset or empty).

    Raises:
        ValueError: ``TF_CONFIG`` is not a JSON object (the message quotes it).
    """
    text = (environ if environ is not None else os.environ).get("TF_CONFIG", "")
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"TF_CONFIG is not JSON ({err.msg}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object with `cluster` and `task`, not {type(value).__name__}")
    return value


_MIRRORED = ("MirroredStrategy", "MirroredStrategyV1")


def strategy_devices(strategy: Any) -> tuple[str, ...]:
    """A ``tf.distribute.MirroredStrategy``'s devices as hookrun's ``device:`` list (``docs/devices.md``).

    ``RunConfig(train_distribute=MirroredStrategy(["/cpu:0", "/cpu:1"]))`` trains as hookrun's towers on
    ``("cpu:0", "cpu:1")``: one model_fn call per device, the gradients averaged (Estimator's optimizer scaled
    each replica's mean loss by 1/K and summed the gradients: the same average).

    Args:
        strategy: a ``tf.distribute.MirroredStrategy`` or ``tf.compat.v1.distribute.MirroredStrategy`` (one
            machine: its ``extended.worker_devices`` are ``/job:localhost/.../device:CPU:N`` or ``GPU:N``).

    Returns:
        ``("cpu:0", ...)`` or ``("gpu:0", ...)``, in the strategy's order.

    Raises:
        ValueError: another strategy (``OneDeviceStrategy``, ``MultiWorkerMirroredStrategy``,
            ``ParameterServerStrategy``, ...), devices of another machine, or CPUs mixed with GPUs.
    """
    name = type(strategy).__name__
    module = type(strategy).__module__ or ""
    if name not in _MIRRORED or not module.startswith("tensorflow."):
        raise ValueError(
            f"RunConfig(train_distribute={name}) is not supported by hookrun.estimator: only tf.distribute."
            "MirroredStrategy (its devices become hookrun's towers, docs/devices.md); for several machines use "
            "TF_CONFIG and hookrun's cluster runner (docs/multi-machine.md)"
        )
    devices = []
    for device in strategy.extended.worker_devices:
        found = re.search(r"(?:^|/)(?:device:)?(CPU|GPU):(\d+)$", str(device), re.IGNORECASE)
        if found is None or "/job:" in str(device) and "/job:localhost" not in str(device):
            raise ValueError(f"RunConfig(train_distribute=MirroredStrategy): device {device!r} is not a CPU or GPU "
                             "of this machine; hookrun's towers run on one machine (docs/devices.md)")
        devices.append(f"{found.group(1).lower()}:{found.group(2)}")
    if len({d.split(":")[0] for d in devices}) > 1:
        raise ValueError(f"RunConfig(train_distribute=MirroredStrategy({devices})): hookrun's towers are all CPUs "
                         "or all GPUs, not both (docs/devices.md)")
    return tuple(devices)


class RunConfig:
    """How an :class:`~hookrun.estimator.Estimator` runs; mirrors ``tf.estimator.RunConfig`` (TF 1.15).

    The values become hookrun's built-in hooks when the Estimator trains (``docs/estimator-api.md``):
    ``save_checkpoints_steps``/``_secs`` and ``keep_checkpoint_max`` the ``checkpoint_saver``,
    ``save_summary_steps`` the ``summary_saver``, ``log_step_count_steps`` the ``step_counter``,
    ``tf_random_seed`` ``data.seed``, ``session_config``'s thread counts and soft placement the ``session:``
    section.

    ``TF_CONFIG`` is read when the object is made, as TensorFlow did: ``cluster_spec``, ``task_type``,
    ``task_id``, ``is_chief``, ``num_ps_replicas``, ``num_worker_replicas`` and ``global_id_in_cluster``
    follow it (one local process without it: a ``worker`` with id 0 that is the chief).

    Args:
        model_dir: where checkpoints and events go (str), or None (the Estimator's ``model_dir``, or a
            temporary directory).
        tf_random_seed: the graph-level seed (int) or None.
        save_summary_steps: steps between summaries (int; None or 0: none).
        save_checkpoints_steps, save_checkpoints_secs: steps or seconds between checkpoints, exclusive; with
            neither, every 600 seconds; both None: no checkpoints while training.
        session_config: a ``tf.compat.v1.ConfigProto`` or None.
        keep_checkpoint_max: checkpoints kept (int); None or 0 keeps them all (as ``Saver``).
        log_step_count_steps: steps between ``global_step/sec`` logs (int; None: none).
        train_distribute: a ``tf.distribute.MirroredStrategy`` (or v1's), whose devices become hookrun's
            towers (``device:`` list, :func:`strategy_devices`); the input_fn's batches are per replica, as
            under Estimator (K successive batches make one step's global batch).
        eval_distribute, experimental_distribute, device_fn: must be None in hookrun; given, they raise.
        keep_checkpoint_every_n_hours, protocol, experimental_max_worker_delay_secs,
            session_creation_timeout_secs: accepted, without effect.

    Raises:
        ValueError: both ``save_checkpoints_steps`` and ``_secs``; a ``train_distribute`` other than a
            one-machine ``MirroredStrategy``; an ``eval_distribute``, ``experimental_distribute`` or
            ``device_fn``; a malformed ``TF_CONFIG``.
    """

    def __init__(
        self,
        model_dir: str | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int | None = 100,
        save_checkpoints_steps: Any = _USE_DEFAULT,
        save_checkpoints_secs: Any = _USE_DEFAULT,
        session_config: Any = None,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000,
        log_step_count_steps: int | None = 100,
        train_distribute: Any = None,
        device_fn: Any = None,
        protocol: str | None = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: int | None = None,
        session_creation_timeout_secs: int = 7200,
    ) -> None:
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, DEFAULT_SAVE_CHECKPOINTS_SECS
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        if save_checkpoints_steps and save_checkpoints_secs:
            raise ValueError("Can not provide both save_checkpoints_steps and save_checkpoints_secs.")
        self._train_distribute = train_distribute
        self._train_devices = strategy_devices(train_distribute) if train_distribute is not None else None
        for name, value in (("eval_distribute", eval_distribute),
                            ("experimental_distribute", experimental_distribute), ("device_fn", device_fn)):
            if value is not None:
                raise ValueError(
                    f"RunConfig({name}=...) is not supported by hookrun.estimator: tf.distribute strategies do not "
                    "run on hookrun's runner; train in one process, or use hookrun's `cluster:` config "
                    "(docs/distributed.md)"
                )
        self._model_dir = os.fspath(model_dir) if model_dir is not None else None
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._protocol = protocol
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._read_tf_config(read_tf_config())

    def _read_tf_config(self, tf_config: dict[str, Any]) -> None:
        """Set the cluster properties from ``TF_CONFIG``.

        As TF 1.15's ``RunConfig._init_distributed_setting_from_environment_var``.
        """
        cluster = tf_config.get("cluster") or {}
        task = tf_config.get("task") or {}
        if not isinstance(cluster, dict) or not isinstance(task, dict):
            raise ValueError("TF_CONFIG's `cluster` and `task` must be JSON objects")
        self._cluster_spec = {str(k): list(v) for k, v in cluster.items()}
        if not cluster:
            self._task_type, self._task_id = TaskType.WORKER, 0
            self._is_chief, self._num_ps_replicas, self._num_worker_replicas = True, 0, 1
            self._master, self._evaluation_master, self._global_id_in_cluster = "", "", 0
            return
        if "type" not in task:
            raise ValueError("If `cluster` is set in TF_CONFIG, it must have one `task` with `type` and `index`")
        self._task_type = str(task["type"])
        self._task_id = int(task.get("index", 0))
        chiefs = cluster.get(TaskType.CHIEF, [])
        workers = cluster.get(TaskType.WORKER, [])
        self._num_ps_replicas = len(cluster.get(TaskType.PS, []))
        self._num_worker_replicas = len(chiefs) + len(workers) + len(cluster.get(TaskType.MASTER, []))
        if self._task_type == TaskType.EVALUATOR:
            self._is_chief = False
            self._num_ps_replicas, self._num_worker_replicas = 0, 0
        elif chiefs:
            self._is_chief = self._task_type == TaskType.CHIEF
        else:
            self._is_chief = self._task_type in (TaskType.WORKER, TaskType.MASTER) and self._task_id == 0
        address = (cluster.get(self._task_type) or [None])[self._task_id:self._task_id + 1]
        self._master = f"grpc://{address[0]}" if address and address[0] else ""
        self._evaluation_master = ""
        order = [TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER]
        if self._task_type in order:
            before = sum(len(cluster.get(t, [])) for t in order[: order.index(self._task_type)])
            self._global_id_in_cluster = before + self._task_id
        else:
            self._global_id_in_cluster = None

    # TF 1.15's read-only properties ----------------------------------------------------------------------
    @property
    def model_dir(self) -> str | None:
        """The model directory (``tf.estimator.RunConfig.model_dir``)."""
        return self._model_dir

    @property
    def tf_random_seed(self) -> int | None:
        """The graph-level random seed."""
        return self._tf_random_seed

    @property
    def save_summary_steps(self) -> int | None:
        """Steps between summaries."""
        return self._save_summary_steps

    @property
    def save_checkpoints_steps(self) -> int | None:
        """Steps between checkpoints (None: by seconds, or none)."""
        return self._save_checkpoints_steps

    @property
    def save_checkpoints_secs(self) -> int | None:
        """Seconds between checkpoints (None: by steps, or none)."""
        return self._save_checkpoints_secs

    @property
    def session_config(self) -> Any:
        """The ``tf.compat.v1.ConfigProto`` given, or None."""
        return self._session_config

    @property
    def keep_checkpoint_max(self) -> int | None:
        """Checkpoints kept."""
        return self._keep_checkpoint_max

    @property
    def keep_checkpoint_every_n_hours(self) -> float:
        """Accepted, without effect in hookrun."""
        return self._keep_checkpoint_every_n_hours

    @property
    def log_step_count_steps(self) -> int | None:
        """Steps between ``global_step/sec`` logs."""
        return self._log_step_count_steps

    @property
    def train_distribute(self) -> Any:
        """The ``MirroredStrategy`` given, or None (``tf.estimator.RunConfig.train_distribute``)."""
        return self._train_distribute

    @property
    def train_devices(self) -> tuple[str, ...] | None:
        """The ``device:`` list of ``train_distribute`` (``("cpu:0", "cpu:1")``), or None (hookrun's own)."""
        return self._train_devices

    @property
    def eval_distribute(self) -> None:
        """Always None (evaluation runs on one device)."""
        return None

    @property
    def device_fn(self) -> None:
        """Always None."""
        return None

    @property
    def protocol(self) -> str | None:
        """Accepted, without effect."""
        return self._protocol

    @property
    def session_creation_timeout_secs(self) -> int:
        """Accepted, without effect."""
        return self._session_creation_timeout_secs

    @property
    def cluster_spec(self) -> dict[str, list[str]]:
        """``TF_CONFIG``'s ``cluster`` (job -> addresses); ``{}`` without it (TF gave a ``ClusterSpec``)."""
        return copy.deepcopy(self._cluster_spec)

    @property
    def task_type(self) -> str:
        """``chief``, ``worker``, ``ps``, ``evaluator`` or ``master`` (``worker`` without ``TF_CONFIG``)."""
        return self._task_type

    @property
    def task_id(self) -> int:
        """The index of this task within its type (0 without ``TF_CONFIG``)."""
        return self._task_id

    @property
    def is_chief(self) -> bool:
        """Whether this task is the chief: the ``chief`` task, else ``worker`` 0 (True without ``TF_CONFIG``)."""
        return self._is_chief

    @property
    def num_ps_replicas(self) -> int:
        """Parameter servers in the cluster."""
        return self._num_ps_replicas

    @property
    def num_worker_replicas(self) -> int:
        """Training tasks: chief, master and workers (1 without ``TF_CONFIG``; 0 on an evaluator)."""
        return self._num_worker_replicas

    @property
    def master(self) -> str:
        """``grpc://address`` of this task, or ``""``."""
        return self._master

    @property
    def evaluation_master(self) -> str:
        """Always ``""``."""
        return self._evaluation_master

    @property
    def global_id_in_cluster(self) -> int | None:
        """The index of this training task over chief, master and workers (None for ps and evaluator)."""
        return self._global_id_in_cluster

    def replace(self, **kwargs: Any) -> RunConfig:
        """A copy with ``kwargs`` changed (``tf.estimator.RunConfig.replace``).

        Raises:
            ValueError: an unknown property name, or a combination ``__init__`` refuses.
        """
        names = {"model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                 "save_checkpoints_secs", "session_config", "keep_checkpoint_max", "log_step_count_steps",
                 "train_distribute", "device_fn", "eval_distribute", "experimental_distribute", *_ACCEPTED}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ValueError(f"Replacing {unknown} is not supported. Allowed properties are {sorted(names)}.")
        current = {
            "model_dir": self._model_dir, "tf_random_seed": self._tf_random_seed,
            "save_summary_steps": self._save_summary_steps,
            "save_checkpoints_steps": self._save_checkpoints_steps,
            "save_checkpoints_secs": self._save_checkpoints_secs, "session_config": self._session_config,
            "keep_checkpoint_max": self._keep_checkpoint_max,
            "keep_checkpoint_every_n_hours": self._keep_checkpoint_every_n_hours,
            "log_step_count_steps": self._log_step_count_steps, "protocol": self._protocol,
            "experimental_max_worker_delay_secs": self._experimental_max_worker_delay_secs,
            "session_creation_timeout_secs": self._session_creation_timeout_secs,
            "train_distribute": self._train_distribute,
        }
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
            current["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
            current["save_checkpoints_steps"] = None
        current.update(kwargs)
        return RunConfig(**current)

    def __deepcopy__(self, memo: dict[int, Any]) -> RunConfig:
        """A deep copy sharing ``train_distribute`` (a strategy holds devices and threads: TensorFlow shared it too)."""
        clone = copy.copy(self)
        for key, value in self.__dict__.items():
            if key != "_train_distribute":
                setattr(clone, key, copy.deepcopy(value, memo))
        return clone

    def __repr__(self) -> str:
        return (f"RunConfig(model_dir={self._model_dir!r}, tf_random_seed={self._tf_random_seed!r}, "
                f"save_checkpoints_steps={self._save_checkpoints_steps!r}, "
                f"save_checkpoints_secs={self._save_checkpoints_secs!r}, task_type={self._task_type!r})")


__all__ = ["RunConfig", "TaskType", "read_tf_config", "strategy_devices"]
