"""The run's hyperparameters for TensorBoard's HParams dashboard.

Each training session writes one ``session_start`` summary (TensorBoard's hparams plugin,
``tensorboard.plugins.hparams.summary.session_start_pb``) to an event file at the run directory's top: the
config's hyperparameters (every value under ``graph``: builder, params, optimizer; and ``data``'s
``batch_size``, ``epochs``, ``shuffle``, ``seed``, ``standardize``) and every value a ``--set`` or
``--sweep`` gave (by its YAML path, ``graph.optimizer.learning_rate``). TensorBoard infers the
dashboard's columns from the runs' ``session_start`` records, so a sweep's runs are compared by them, and
a session's metrics from the scalars of the runs below it: the run directory is the session, so
``train/``'s and ``eval/``'s scalars (``loss``, ``rmse`` ...) are its metrics, as with Keras's
``hp.KerasCallback`` beside its ``TensorBoard`` callback's ``train/`` and ``validation/``.

This module imports TensorFlow (through TensorBoard's summary protos) only when called.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hookrun.config_schemas.loader import LoadedConfig

__all__ = ["DATA_HPARAMS", "run_hparams", "write_hparams"]

#: ``data`` keys that are hyperparameters (the others name files and columns).
DATA_HPARAMS = ("batch_size", "epochs", "shuffle", "seed", "standardize")

#: Longest string value written (TensorBoard shows it in one table cell).
MAX_TEXT = 200


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Put every leaf of ``value`` into ``out`` under its dotted path; a list is one value (its JSON text)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = value


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    """The value at ``path`` (keys and list indices) in ``data``, or None when there is none."""
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and str(part).isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def _hparam_value(value: Any) -> bool | int | float | str:
    """A value TensorBoard's hparams take (bool, number or text); None reads ``null`` and a list its JSON."""
    if isinstance(value, (bool, int, float)):
        return value
    text = "null" if value is None else json.dumps(value) if isinstance(value, list) else str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def run_hparams(loaded: LoadedConfig) -> dict[str, bool | int | float | str]:
    """The hyperparameters of a run, by dotted YAML path, as TensorBoard's HParams dashboard shows them.

    Args:
        loaded: the validated config, with its ``--set`` overrides (a sweep's values are overrides too).

    Returns:
        ``{"graph.optimizer.learning_rate": 0.01, "data.batch_size": 32, ...}``: every leaf under
        ``graph``, the :data:`DATA_HPARAMS` of ``data``, and every value an override set (by its path,
        ``hooks.0.num_steps``; a mapping it set as its leaves), sorted by path. Values are bool, int, float
        or text (None as ``"null"``, a list as its JSON, ``[64, 32]``; text cut at :data:`MAX_TEXT`
        characters).
    """
    dumped = loaded.config.model_dump(mode="json")
    flat: dict[str, Any] = {}
    _flatten(dumped.get("graph", {}), "graph", flat)
    data = dumped.get("data", {})
    for key in DATA_HPARAMS:
        if key in data:
            flat[f"data.{key}"] = data[key]
    for override in loaded._overrides:  # noqa: SLF001 - the applied paths, as LoadedConfig keeps them
        _flatten(_at(dumped, tuple(override.path)), ".".join(str(part) for part in override.path), flat)
    return {path: _hparam_value(flat[path]) for path in sorted(flat)}


def write_hparams(run_dir: Path, loaded: LoadedConfig) -> None:
    """Write the run's :func:`run_hparams` to ``run_dir`` as TensorBoard's ``session_start`` summary.

    Follows ``tensorboard.plugins.hparams.summary.session_start_pb`` (the TF1 API), written by a
    ``tf.compat.v1.summary.FileWriter`` of its own with no graph (the graph is ``train/``'s, where
    ``checkpoint_saver`` writes it) and closed at once. Called once per session by the chief, after the
    event directories were checked (:func:`~hookrun.runner.run_dir.directory.check_event_dirs`), inside
    ``writer_thread_errors_deferred``.

    Args:
        run_dir: the run directory (locked by this process).
        loaded: the validated config and its overrides.

    Raises:
        OSError or ``tf.errors.OpError``: the event file cannot be written (a full disk), from ``close``;
            the runner reports it in one line (``cannot write …``).
    """
    import tensorflow as tf
    from tensorboard.plugins.hparams import summary as hparams_summary

    summary = hparams_summary.session_start_pb(hparams=run_hparams(loaded))
    writer = tf.compat.v1.summary.FileWriter(str(run_dir))
    try:
        writer.add_summary(summary)
    finally:
        writer.close()
