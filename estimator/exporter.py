"""Exporters of ``EvalSpec``: ``Exporter``, ``FinalExporter``, ``LatestExporter``, ``BestExporter`` (TF 1.15).

They mirror ``tf.estimator``'s classes of the same names (``estimator/exporter.py``).

``train_and_evaluate`` calls ``export(estimator, export_path, checkpoint_path, eval_result,
is_the_final_export)`` after each evaluation, with ``export_path`` ``model_dir/export/<name>``.
Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any


class Exporter:
    """The interface of an exporter; mirrors ``tf.estimator.Exporter``."""

    @property
    def name(self) -> str:
        """The directory name under ``model_dir/export``."""
        raise NotImplementedError

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Mapping[str, Any],
               is_the_final_export: bool) -> bytes | None:
        """Export (or not) the model; returns the export directory, or None when nothing was written."""
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    """Exports with ``Estimator.export_saved_model`` (TF 1.15's ``_SavedModelExporter``)."""

    def __init__(self, name: str, serving_input_receiver_fn: Callable[[], Any],
                 assets_extra: Mapping[str, str] | None = None, as_text: bool = False) -> None:
        if not name:
            raise ValueError("`name` must be a non-empty string")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self) -> str:
        """The directory name under ``model_dir/export``."""
        return self._name

    def _export(self, estimator: Any, export_path: str, checkpoint_path: str) -> bytes:
        return estimator.export_saved_model(export_path, self._serving_input_receiver_fn,
                                            assets_extra=self._assets_extra, as_text=self._as_text,
                                            checkpoint_path=checkpoint_path)


def _keep_latest(export_path: str, keep: int | None) -> None:
    """Delete all but the ``keep`` newest timestamped exports in ``export_path`` (``_garbage_collect_exports``)."""
    import shutil

    if keep is None or not os.path.isdir(export_path):
        return
    stamps = sorted(int(name) for name in os.listdir(export_path) if name.isdigit())
    for stamp in stamps[:-keep] if keep > 0 else stamps:
        shutil.rmtree(os.path.join(export_path, str(stamp)), ignore_errors=True)


class FinalExporter(_SavedModelExporter):
    """Export once, at the end of training; mirrors ``tf.estimator.FinalExporter``.

    As in TensorFlow 1.15, "the end" is the evaluation at or past ``TrainSpec.max_steps``: without
    ``max_steps`` a local ``train_and_evaluate`` never exports with it.

    Args:
        name: the export's directory under ``model_dir/export``.
        serving_input_receiver_fn: as ``Estimator.export_saved_model``.
        assets_extra, as_text: as ``Estimator.export_saved_model``.
    """

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Mapping[str, Any],
               is_the_final_export: bool) -> bytes | None:
        """Export when ``is_the_final_export``; else nothing (None)."""
        if not is_the_final_export:
            return None
        return self._export(estimator, export_path, checkpoint_path)


class LatestExporter(_SavedModelExporter):
    """Export after every evaluation, keeping the ``exports_to_keep`` newest; mirrors ``tf.estimator.LatestExporter``.

    Args:
        name, serving_input_receiver_fn, assets_extra, as_text: as :class:`FinalExporter`.
        exports_to_keep: exports kept (int), or None to keep all.

    Raises:
        ValueError: ``exports_to_keep`` is not None and not positive.
    """

    def __init__(self, name: str, serving_input_receiver_fn: Callable[[], Any],
                 assets_extra: Mapping[str, str] | None = None, as_text: bool = False,
                 exports_to_keep: int | None = 5) -> None:
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError(f"`exports_to_keep`, if provided, must be a positive number. Got {exports_to_keep}")
        self._exports_to_keep = exports_to_keep

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Mapping[str, Any],
               is_the_final_export: bool) -> bytes | None:
        """Export, then delete the oldest exports beyond ``exports_to_keep``."""
        exported = self._export(estimator, export_path, checkpoint_path)
        _keep_latest(export_path, self._exports_to_keep)
        return exported


def _loss_smaller(best_eval_result: Mapping[str, Any], current_eval_result: Mapping[str, Any]) -> bool:
    """TF 1.15's default ``compare_fn``: the current ``loss`` is smaller.

    Raises:
        ValueError: either result is empty or lacks ``loss``.
    """
    if not best_eval_result or "loss" not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or "loss" not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


class BestExporter(_SavedModelExporter):
    """Export when an evaluation is the best so far; mirrors ``tf.estimator.BestExporter``.

    The best so far starts from the event files ``event_file_pattern`` (relative to ``model_dir``) already
    hold, as TensorFlow did, so a resumed run keeps its best.

    Args:
        name: default ``best_exporter``.
        serving_input_receiver_fn, assets_extra, as_text: as :class:`FinalExporter`.
        event_file_pattern: the evaluation's event files, relative to ``model_dir`` (``eval/*.tfevents.*``).
        compare_fn: ``compare_fn(best_eval_result, current_eval_result) -> bool`` (default: smaller ``loss``).
        exports_to_keep: exports kept (int) or None.

    Raises:
        ValueError: ``compare_fn`` None; ``exports_to_keep`` not positive.
    """

    def __init__(self, name: str = "best_exporter", serving_input_receiver_fn: Callable[[], Any] | None = None,
                 event_file_pattern: str = "eval/*.tfevents.*",
                 compare_fn: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] = _loss_smaller,
                 assets_extra: Mapping[str, str] | None = None, as_text: bool = False,
                 exports_to_keep: int | None = 5) -> None:
        if compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)  # type: ignore[arg-type]
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError(f"`exports_to_keep`, if provided, must be a positive number. Got {exports_to_keep}")
        self._compare_fn = compare_fn
        self._event_file_pattern = event_file_pattern
        self._exports_to_keep = exports_to_keep
        self._best_eval_result: dict[str, Any] | None = None
        self._model_dir: str | None = None

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Mapping[str, Any],
               is_the_final_export: bool) -> bytes | None:
        """Export when ``eval_result`` beats the best so far (``compare_fn``); else None."""
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._best_in_events(os.path.join(self._model_dir, self._event_file_pattern))
        if self._best_eval_result is None or self._compare_fn(self._best_eval_result, eval_result):
            self._best_eval_result = dict(eval_result)
            exported = self._export(estimator, export_path, checkpoint_path)
            _keep_latest(export_path, self._exports_to_keep)
            return exported
        return None

    def _best_in_events(self, pattern: str) -> dict[str, Any] | None:
        """The best evaluation recorded in the event files (TF 1.15's ``_get_best_eval_result``)."""
        import glob

        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

        best: dict[str, Any] | None = None
        for path in glob.glob(pattern):
            for event in EventFileLoader(path).Load():
                if not event.HasField("summary"):
                    continue
                values = {}
                for value in event.summary.value:
                    if value.HasField("simple_value"):
                        values[value.tag] = value.simple_value
                    elif value.HasField("tensor"):
                        import numpy as np
                        from tensorboard.util import tensor_util

                        values[value.tag] = np.asarray(tensor_util.make_ndarray(value.tensor)).item()
                if values and "loss" in values and (best is None or self._compare_fn(best, values)):
                    best = values
        return best


__all__ = ["BestExporter", "Exporter", "FinalExporter", "LatestExporter"]
