"""A finished (or running) run directory, opened to use its model: config, preprocessing, checkpoint, data.

Shared by ``hookrun evaluate`` (and later ``predict`` and ``export``): everything comes from the
run directory's own files, its self-contained ``config.yaml`` and ``preprocessing.json``, so the
model sees its inputs exactly as in training (the same ``tf.data`` transform,
:mod:`hookrun.runner.data.streaming`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookrun.common.errors import DataError, SetupError
from hookrun.config_schemas.loader import LoadedConfig
from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.sources import absolute_spec
from hookrun.runner.data.streaming import EvalInput, StreamInput, scan_data
from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits, raise_if_vanished

__all__ = [
    "SavedRun", "check_checkpoint_fits", "evaluation_input", "open_run", "raise_if_vanished", "resolve_checkpoint",
]

#: The run directory's files this module reads.
CONFIG_FILE = "config.yaml"
PREPROCESSING_FILE = "preprocessing.json"
#: Where ``early_stopping`` keeps the best checkpoint (its own ``checkpoint`` state file).
BEST_DIR = "best"


@dataclass
class SavedRun:
    """A run directory's config and fitted preprocessing.

    Attributes:
        run_dir: the run directory (absolute).
        loaded: its ``config.yaml``, loaded.
        preprocessor: its ``preprocessing.json``: the state the model was trained with; None for a run
            trained from ``data.input_fn`` (opened with ``open_run(..., input_fn=True)``).
    """

    run_dir: Path
    loaded: LoadedConfig
    preprocessor: Preprocessor

    def hook_paths(self) -> list[str]:
        """The paths its hooks write inside the run directory (``history_saver``'s ``filename``, ...), relative."""
        return [
            claim.path
            for hook in self.loaded.config.hooks
            for claim in hook.run_paths()
            if claim.owned and not claim.path.startswith("/") and ".." not in claim.path.split("/")
        ]


def open_run(run_dir: str | Path, input_fn: bool = False) -> SavedRun:
    """Open a run directory: load its ``config.yaml`` and ``preprocessing.json`` (no TensorFlow).

    Args:
        run_dir: the run directory.
        input_fn: the caller takes a run trained from ``data.input_fn`` (no ``preprocessing.json``: its
            ``preprocessor`` is None), or a function of the user's replaces the preprocessing.

    Returns:
        The saved run.

    Raises:
        SetupError: not a directory, or no ``config.yaml`` / ``preprocessing.json`` in it, or a run trained from
            a ``data.input_fn`` without ``input_fn`` (exit 2).
        ConfigError: its ``config.yaml`` does not load (exit 2).
    """
    from hookrun.runner.config import load_config
    from hookrun.runner.run_dir.directory import check_usable_path, printable_path

    if str(run_dir) == "":
        raise SetupError("RUN_DIR: an empty path (an unset variable?); give the directory `hookrun train` wrote")
    try:
        directory = Path(run_dir).resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop, a name too long
        raise SetupError(
            f"{printable_path(run_dir)}: cannot use this run directory ({getattr(err, 'strerror', None) or err}); "
            "give the directory `hookrun train` wrote"
        ) from None
    check_usable_path(directory, "run directory", limit=None)
    if not _is_dir(directory):
        raise SetupError(f"{run_dir}: no such run directory; give the directory `hookrun train` wrote")
    if (directory / CONFIG_FILE).is_file() and not (directory / PREPROCESSING_FILE).is_file():
        loaded = load_config(directory / CONFIG_FILE)
        if loaded.config.data.input_fn is not None:  # the user's pipeline: no preprocessing to rebuild the input
            if input_fn:
                return SavedRun(directory, loaded, None)  # type: ignore[arg-type]
            raise SetupError(
                f"{directory}: trained from data.input_fn {loaded.config.data.input_fn}; give your input "
                "function: --input-fn module:function (and graph.serving_input_fn for export; docs/trained-model.md)"
            )
    for name in (CONFIG_FILE, PREPROCESSING_FILE):
        if not (directory / name).is_file():
            raise SetupError(
                f"{directory}: not a hookrun run directory (no {name}); give the directory `hookrun train` wrote"
            )
    loaded = load_config(directory / CONFIG_FILE)
    preprocessor = Preprocessor.load(directory / PREPROCESSING_FILE, loaded.config.data)
    return SavedRun(directory, loaded, preprocessor)


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False where the operating system cannot look it up (a name too long, a loop)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def resolve_checkpoint(tf: Any, run: SavedRun, which: str = "latest") -> tuple[str, int]:
    """The checkpoint prefix ``which`` names, checked to read back whole, and its ``global_step``.

    Args:
        tf: the ``tensorflow`` module.
        run: the run.
        which: ``latest`` (the run directory's newest readable checkpoint, as a resumed run would
            restore), ``best`` (the one ``early_stopping`` kept in ``best/``), or a checkpoint prefix
            (``runs/x/model.ckpt-100``) or a directory holding checkpoints.

    Returns:
        ``(prefix, global_step)``.

    Raises:
        SetupError: no checkpoint there, or it is damaged (exit 2).
    """
    from hookrun.runner.run_dir.checkpoints import checkpoint_damage, find_checkpoint

    if which in ("latest", "best"):
        where = run.run_dir if which == "latest" else run.run_dir / BEST_DIR
        resume = _find(tf, find_checkpoint, where)
        if resume.path is None:
            hint = "train it first" if which == "latest" else "best needs `early_stopping` with `keep_best: true`"
            raise SetupError(f"{where}: no checkpoint to restore ({hint}); or give --checkpoint PATH")
        _refuse_newer_damaged(tf, where, resume.path, resume.step, which)
        return resume.path, resume.step
    if which.strip() == "":
        raise SetupError("--checkpoint: an empty path (an unset variable?); give latest, best or a checkpoint prefix")
    from hookrun.runner.run_dir.directory import check_usable_path, printable_path

    path = Path(which)
    try:
        check_usable_path(path.absolute(), "--checkpoint", limit=None)
        os.stat(f"{which}.index")  # a name too long for the file system, a symlink loop: one line, not a traceback
    except OSError as err:
        if not isinstance(err, FileNotFoundError):
            raise SetupError(
                f"--checkpoint {printable_path(which)}: cannot use this path "
                f"({err.strerror or err}); give latest, best or a checkpoint prefix"
            ) from None
    if _is_dir(path):
        resume = _find(tf, find_checkpoint, path.resolve())
        if resume.path is None:
            raise SetupError(f"{which}: no checkpoint in this directory; give --checkpoint latest, best or a prefix")
        return resume.path, resume.step
    prefix = str(path.resolve()) if path.parent.exists() else which
    if not Path(prefix + ".index").is_file():
        raise SetupError(
            f"{which}: no such checkpoint (no {Path(which).name}.index); give --checkpoint latest, best, or a "
            f"prefix such as {run.run_dir}/model.ckpt-<step>"
        )
    reason = checkpoint_damage(tf, prefix)
    if reason is not None:
        raise SetupError(f"{prefix}: the checkpoint cannot be read ({reason}); choose another --checkpoint")
    try:
        step = int(tf.train.load_variable(prefix, "global_step"))
    except Exception:  # a checkpoint without global_step: step 0
        step = 0
    return prefix, step


def _refuse_newer_damaged(tf: Any, where: Path, chosen: str, step: int, which: str) -> None:
    """Refuse ``latest``/``best`` when a newer checkpoint than the readable ``chosen`` one is damaged.

    A resumed run falls back to an older checkpoint (and says so, then trains on); predicting, exporting
    or evaluating with it would give an older model's results without a word, so the user chooses.

    Raises:
        SetupError: a checkpoint in ``where`` with a step above ``step`` does not read back whole (exit 2).
    """
    from hookrun.runner.run_dir.checkpoints import newer_damaged

    damaged = newer_damaged(tf, where, step)
    if damaged is not None:
        prefix, reason = damaged
        raise SetupError(
            f"{prefix}: the {which} checkpoint is damaged ({reason}); restore it, or give --checkpoint "
            f"{chosen} (the newest readable one, global step {step})"
        )


def _find(tf: Any, find_checkpoint: Any, where: Path) -> Any:
    """:func:`~hookrun.runner.run_dir.checkpoints.find_checkpoint`, its error worded for reading, not training."""
    try:
        return find_checkpoint(tf, where)
    except SetupError as err:
        reason = str(err).split("; starting afresh")[0]
        raise SetupError(f"{reason}; restore them, or give --checkpoint PATH of a readable one") from None


def evaluation_input(run: SavedRun, files: list[str] | None = None, base_dir: Path | None = None) -> EvalInput:
    """The rows to evaluate, read and transformed with the run's saved preprocessing (one pass first, no TF).

    Args:
        run: the run.
        files: data files, globs or directories (CSV or TFRecord, as ``data.train``), or None for
            the run's own validation rows (``data.validation`` or the ``validation_split`` hold-out).
        base_dir: what relative ``files`` are relative to (default: the current directory).

    Returns:
        The input, every row once in file order; its label column is read (and needed).

    Raises:
        DataError: a file is missing, lacks a feature or label column, or holds a bad cell
            (names file, line and column); no rows; the run has no validation data and no ``files``.
    """
    # The saved columns, not "every column but the label" of these files: extra columns are ignored.
    data = run.loaded.config.data.model_copy(update={"features": [c.name for c in run.preprocessor.columns]})
    kinds = run.preprocessor.kinds
    if files is None:
        if data.validation is None and data.validation_split is None:
            raise SetupError(
                f"{run.run_dir / CONFIG_FILE}: the run has no validation data (data.validation or "
                "data.validation_split); give the rows to evaluate with --data FILES"
            )
        scan = scan_data(data, run.loaded.base_dir, kinds=kinds)
        stream = StreamInput(scan, run.preprocessor, data)
    else:
        if not files:
            raise SetupError("--data names no file; give one or more data files")
        if any(not str(name).strip() for name in files):  # `--data "$UNSET"` would read the whole current directory
            raise SetupError("--data: an empty path (an unset variable?); give data files, or `.` for this directory")
        where = base_dir or Path.cwd()
        only = data.model_copy(
            update={"train": absolute_spec(list(files), where), "validation": None, "validation_split": None}
        )
        scan = scan_data(only, where, kinds=kinds, train_key="--data")
        trained = run.preprocessor.label.vocabulary
        if trained is not None:  # a text label: each class must be one the model learnt
            unknown = [c for c in scan.state.label.vocabulary or [] if c not in set(trained)]
            if unknown:
                raise DataError(
                    f"{scan.train.first}: the label {data.label!r} has class {unknown[0]!r}, which the model was "
                    f"not trained on (its classes: {', '.join(trained)}); evaluate on rows of those classes"
                )
        # The files are read as the validation set: every row once, in file order.
        scan = dataclasses.replace(
            scan,
            validation=scan.train,
            validation_rows=scan.train_rows,
            dropped_validation=scan.dropped_train,
        )
        stream = StreamInput(scan, run.preprocessor, only)
    evaluation = stream.evaluation()
    assert evaluation is not None  # a validation set is there by construction
    return evaluation
