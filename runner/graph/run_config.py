"""The ``config`` argument of a model_fn and an input_fn: ``tf.estimator.RunConfig``'s attributes, from the run.

``tf.estimator.Estimator`` passed its ``RunConfig`` to every ``model_fn`` and ``input_fn`` that named a
``config`` parameter; programs read ``config.model_dir``, ``config.tf_random_seed``,
``config.save_checkpoints_steps``, ``config.is_chief``, ``config.task_type``... hookrun passes a
:class:`RunInfo`: a frozen object with the attribute names of TensorFlow 1.15's ``RunConfig``, each
taken from the run (the config's hooks, ``data.seed``, the cluster role), and hookrun's own values
(``label_scale``, the named features' descriptions) under one attribute, :attr:`RunInfo.hookrun`, so a
model_fn's ``params`` are exactly ``graph.params`` as written.

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hookrun.common.errors import PlacedError
from hookrun.config_schemas.interpolation import interpolate

#: The ``params`` keys hookrun adds for a builder of the ``fn(features, labels, params)`` form; a model_fn
#: finds their values in ``config.hookrun`` instead (see :class:`HookrunValues`).
HOOKRUN_PARAMS = ("mode", "label_scale", "feature_columns")


@dataclass(frozen=True)
class HookrunValues:
    """hookrun's own values for a model_fn: ``config.hookrun`` (no ``RunConfig`` attribute holds them).

    Attributes:
        mode: the mode of this call (``"train"``, ``"eval"`` or ``"infer"``, as ``ModeKeys``); the
            model_fn's ``mode`` argument too. None for an input_fn's config.
        label_scale: ``data.label_scale`` (1.0 without it, and with ``data.input_fn``): labels arrive
            divided by it; multiply predictions by it for the label's units.
        feature_columns: with named features (``graph.features: named``), column name -> its description
            (``{"kind": "numeric"}`` or ``{"kind": "categorical", "num_buckets": N, "vocabulary": [...]}``),
            read-only; None otherwise.
        label_vocabulary: with data files and a text label, the label's values in class-id order (the reader's
            class vocabulary: the training split's sorted classes; labels arrive as those ids); None otherwise.
    """

    mode: str | None = None
    label_scale: float = 1.0
    feature_columns: Mapping[str, Any] | None = None
    label_vocabulary: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RunInfo:
    """What a model_fn or input_fn naming ``config`` gets; mirrors ``tf.estimator.RunConfig`` (TF 1.15).

    Every attribute has ``RunConfig``'s name and meaning, its value taken from this run. Where hookrun has
    no such setting (no hook that would use it) the value is None, not Estimator's default: nothing is
    done every ``save_summary_steps`` without a ``summary_saver`` hook.

    Attributes:
        model_dir: the run directory (absolute path, text), or None where none is known.
        tf_random_seed: ``data.seed``: the graph-level seed (and Python's and NumPy's) set before the
            model_fn is called; None without it.
        save_summary_steps: the first ``summary_saver`` hook's ``save_steps`` (steps), else None.
        save_checkpoints_steps: the first ``checkpoint_saver`` hook's ``save_steps`` (steps), else None.
        save_checkpoints_secs: its ``save_secs`` (seconds), else None.
        keep_checkpoint_max: its ``max_to_keep`` (count); 5 (the ``Saver``'s default) without one.
        log_step_count_steps: the ``step_counter`` hook's ``every_n_steps`` (steps), else None.
        session_config: the ``tf.compat.v1.ConfigProto`` the training session uses, or None where no
            session is configured (``hookrun evaluate``, ``predict``, ``export``, ``validate --build``).
        is_chief: this process is the chief (True without a cluster).
        num_worker_replicas: training processes: the chief and the workers (1 without a cluster).
        num_ps_replicas: parameter servers (0 without a cluster).
        task_type: ``"chief"``, ``"worker"`` or ``"ps"`` (``"worker"`` without a cluster, as ``RunConfig``).
        task_id: this task's index in its job (0 without a cluster).
        cluster_spec: a ``tf.train.ClusterSpec`` of the cluster (empty without one), or the jobs as a dict
            (job -> addresses) where TensorFlow is not imported.
        master: ``grpc://host:port`` of this task on a cluster, else ``""``.
        evaluation_master: ``""`` (the evaluation runs in the training process).
        train_distribute: None (hookrun runs no ``tf.distribute`` strategy).
        device_fn: None (on a cluster the placement is ``replica_device_setter``'s, applied by hookrun).
        hookrun: hookrun's own values (:class:`HookrunValues`); the mode of the call among them.
    """

    model_dir: str | None = None
    tf_random_seed: int | None = None
    save_summary_steps: int | None = None
    save_checkpoints_steps: int | None = None
    save_checkpoints_secs: int | None = None
    keep_checkpoint_max: int = 5
    log_step_count_steps: int | None = None
    session_config: Any = None
    is_chief: bool = True
    num_worker_replicas: int = 1
    num_ps_replicas: int = 0
    task_type: str = "worker"
    task_id: int = 0
    cluster_spec: Any = field(default_factory=lambda: MappingProxyType({}))
    master: str = ""
    evaluation_master: str = ""
    train_distribute: Any = None
    device_fn: Any = None
    hookrun: HookrunValues = field(default_factory=HookrunValues)

    def with_hookrun(self, mode: str | None, params: Mapping[str, Any]) -> RunInfo:
        """A copy whose :attr:`hookrun` holds ``mode`` and the hookrun keys of ``params`` (``label_scale``, ...).

        Args:
            mode: the call's mode.
            params: a builder's params (``graph.params`` plus :data:`HOOKRUN_PARAMS` keys).
        """
        columns = params.get("feature_columns")
        values = replace(
            self.hookrun,
            mode=mode,
            label_scale=float(params.get("label_scale", self.hookrun.label_scale)),
            feature_columns=MappingProxyType(dict(columns)) if columns is not None else self.hookrun.feature_columns,
        )
        return replace(self, hookrun=values)

    def with_label_classes(self, state: Any) -> RunInfo:
        """A copy whose ``hookrun.label_vocabulary`` is the reader's class vocabulary of a text label.

        Args:
            state: the data files' ``Preprocessor`` (its ``label``: ``kind`` and ``vocabulary``), or None.

        Returns:
            ``self`` unchanged without a state or a text (categorical) label with a vocabulary.
        """
        label = getattr(state, "label", None)
        vocabulary = getattr(label, "vocabulary", None) if getattr(label, "kind", None) == "categorical" else None
        if not vocabulary:
            return self
        return replace(self, hookrun=replace(self.hookrun, label_vocabulary=tuple(str(v) for v in vocabulary)))


def _first(hooks: Any, kind: str) -> Any:
    """The first entry of ``hooks`` of type ``kind``, or None."""
    return next((hook for hook in hooks if getattr(hook, "type", None) == kind), None)


def make_run_info(
    config: Any,
    run_dir: Any = None,
    *,
    cluster: Any = None,
    session_config: Any = None,
    tf: Any = None,
) -> RunInfo:
    """The :class:`RunInfo` of a run: its hooks' settings, ``data.seed``, the cluster role.

    Args:
        config: the run config (``hookrun.config_schemas.run_config.RunConfigBase``).
        run_dir: the run directory (a path), or None.
        cluster: this task's ``hookrun.runner.cluster.plan.ClusterPlan``, or None without a cluster.
        session_config: the training session's ``ConfigProto``, or None.
        tf: the ``tensorflow`` module, to give ``cluster_spec`` as a ``tf.train.ClusterSpec``; None gives a
            read-only dict.

    Returns:
        The run's ``config`` (its :attr:`RunInfo.hookrun` holds defaults; see :meth:`RunInfo.with_hookrun`).
    """
    hooks = list(getattr(config, "hooks", []) or [])
    checkpoints = _first(hooks, "checkpoint_saver")
    summaries = _first(hooks, "summary_saver")
    counter = _first(hooks, "step_counter")
    jobs: dict[str, list[str]] = {}
    role: dict[str, Any] = {}
    if cluster is not None:
        jobs = {job: list(addresses) for job, addresses in cluster.jobs.items() if addresses}
        role = {
            "is_chief": bool(cluster.is_chief),
            "num_worker_replicas": len(cluster.training_tasks),
            "num_ps_replicas": int(cluster.num_ps),
            "task_type": cluster.task.job,
            "task_id": int(cluster.task.index),
            "master": f"grpc://{cluster.address()}",
        }
    spec = tf.train.ClusterSpec(jobs) if tf is not None else MappingProxyType(jobs)
    return RunInfo(
        model_dir=str(run_dir) if run_dir is not None else None,
        tf_random_seed=config.data.seed,
        save_summary_steps=getattr(summaries, "save_steps", None),
        save_checkpoints_steps=getattr(checkpoints, "save_steps", None),
        save_checkpoints_secs=getattr(checkpoints, "save_secs", None),
        keep_checkpoint_max=getattr(checkpoints, "max_to_keep", 5),
        log_step_count_steps=getattr(counter, "every_n_steps", None),
        session_config=session_config,
        cluster_spec=spec,
        **role,
    )


def split_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without the keys hookrun adds (:data:`HOOKRUN_PARAMS`): ``graph.params`` as written (expanded)."""
    return {key: value for key, value in params.items() if key not in HOOKRUN_PARAMS}


__all__ = ["HOOKRUN_PARAMS", "HookrunValues", "RunInfo", "make_run_info", "split_params"]


def builder_params(config: Any, base_dir: Path, run_dir: Path | None) -> dict[str, Any]:
    """``graph.params`` with ``${config_dir}``, ``${run_dir}``, ``${steps_per_run}`` replaced, as in custom hook args.

    The same placeholders as a custom hook's ``args`` (:mod:`hookrun.config_schemas.interpolation`), so a
    vocabulary path in params (``"${config_dir}/train.vocab"``) resolves against the config file rather than
    the working directory; ``$$`` writes one ``$``. The config keeps the placeholders (the saved
    ``config.yaml`` too): they are replaced each time a graph is built.

    Args:
        config: the run config.
        base_dir: the config file's directory (absolute): ``${config_dir}``.
        run_dir: the run directory (absolute): ``${run_dir}``; None where no run directory is known.

    Returns:
        A new dict; strings at any depth replaced, other values as given.

    Raises:
        PlacedError: an unknown placeholder, a ``${`` without ``}``, or ``${run_dir}`` with no run directory.
    """
    values = {
        "config_dir": str(base_dir),
        "steps_per_run": str(int(getattr(config.session, "steps_per_run", 1))),
    }
    if run_dir is not None:
        values["run_dir"] = str(run_dir)
    try:
        return interpolate(config.graph.params, values)
    except ValueError as err:
        raise PlacedError("graph.params", str(err)) from None
    except KeyError:
        raise PlacedError("graph.params", "${run_dir} is used, but no run directory is known here") from None
