"""``graph.warm_start``: a new run's trainable variables start from another run's checkpoint (issue 15).

Mirrors ``tf.estimator.WarmStartSettings`` (``ckpt_to_initialize_from``, ``vars_to_warm_start``,
``var_name_to_prev_var_name``): after the graph is built, the selected variables' initializers are
replaced by reads from the checkpoint (``tf.compat.v1.train.init_from_checkpoint``). The session's
``init_op`` runs them only when the run directory has no checkpoint of its own; a resumed run
restores its own checkpoint instead, and the trainer does not even call :func:`warm_start` then.
``global_step`` and the optimizer's slots are not trainable and never warm-started: the new run
starts at global step 0 with fresh optimizer state.

The chosen checkpoint is pinned first (:func:`hookrun.runner.run_dir.checkpoints.pin_checkpoint`:
hard links, or copies, in a private temporary directory) and everything is read from the pinned
files, so a source run still training, whose ``max_to_keep`` deletes that checkpoint before the new
session's ``init_op`` reads it, cannot fail the new run. As ``WarmStartSettings``, every selected
variable must be in the checkpoint.

:func:`resolve_source_path` is TensorFlow-free (the preflight check uses it); :func:`warm_start`
takes the ``tensorflow`` module as an argument.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError, SetupError
from hookrun.common.suggest import did_you_mean
from hookrun.runner.run_dir.checkpoints import PinnedCheckpoint, check_checkpoint_fits, pin_checkpoint

#: The config key every warm-start error about the source is reported at.
FROM_KEY = "graph.warm_start.from"
#: Names shown per list in the note (the rest are counted).
SHOWN_NAMES = 4
#: How often a run directory's checkpoint is chosen again when its files vanish before they are pinned.
PIN_ATTEMPTS = 3


def source_path(text: str, base_dir: Path) -> Path:
    """``graph.warm_start.from`` as an absolute path: ``~`` expanded, relative to the config file's directory."""
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # `~user` of no such user: taken as written
        path = Path(text)
    return path if path.is_absolute() else base_dir / path


def resolve_source_path(text: str, base_dir: Path) -> tuple[Path, str | None]:
    """Where ``graph.warm_start.from`` points, and why nothing usable is there (None when something is).

    No TensorFlow: only the files' presence is checked. A directory must hold a checkpoint
    (a ``*.index`` file: a run directory, its ``best/``, a directory of checkpoints); anything else
    must be a checkpoint prefix with its ``<prefix>.index``.

    Args:
        text: the value of ``from`` (``~`` expanded; relative to ``base_dir``).
        base_dir: the config file's directory.

    Returns:
        ``(absolute path, reason or None)``.
    """
    example = "a run directory or a checkpoint prefix such as runs/x/model.ckpt-100 (relative to the config file)"
    path = source_path(text, base_dir)
    if "\0" in text:
        return path, f"{text!r}: a path cannot hold a NUL character; give {example}"
    try:
        if path.is_dir():
            if any(path.glob("*.index")):
                return path, None
            reason = f"{path}: no checkpoint in this directory (no *.index file); train that run first, or give"
            return path, f"{reason} {example}"
        if Path(f"{path}.index").is_file():
            return path, None
        stem = re.sub(r"\.(index|meta|data-\d+-of-\d+)$", "", path.name)
        if stem != path.name and Path(f"{path.parent / stem}.index").is_file():
            return path, f"{path}: a checkpoint file; give its prefix, {path.parent / stem}"
    except OSError as err:
        return path, f"{path}: cannot be read ({err.strerror or err}); give {example}"
    return path, f"{path}: no such run directory or checkpoint; give {example}"


@dataclass
class WarmStartReport:
    """What a warm start loaded.

    Attributes:
        checkpoint: the checkpoint prefix chosen (absolute, in the source run).
        loaded: ``(graph variable, its name in the checkpoint)``, in the graph's order.
        not_selected: trainable variables that ``vars`` does not match (they keep their initializers).
        pinned: the checkpoint's pinned files, which the graph's initializers read: keep them until the
            session has run ``init_op`` (and may run it again), then :meth:`close`.
    """

    checkpoint: str
    loaded: list[tuple[str, str]] = field(default_factory=list)
    not_selected: list[str] = field(default_factory=list)
    pinned: PinnedCheckpoint | None = None

    def note(self) -> str:
        """One line for the user: counts and a few names of what was loaded and what was not."""
        total = len(self.loaded) + len(self.not_selected)
        loaded = [new if new == old else f"{new} <- {old}" for new, old in self.loaded]
        parts = [f"warm start from {self.checkpoint}: loaded {len(self.loaded)} of {total} trainable variables "
                 f"({_short(loaded)})"]
        if self.not_selected:
            parts.append(f"not matched by vars: {len(self.not_selected)} ({_short(self.not_selected)})")
        parts.append("global_step and optimizer slots start afresh")
        return "; ".join(parts)

    def close(self) -> None:
        """Remove the pinned files (call after the session is closed; again: nothing)."""
        if self.pinned is not None:
            self.pinned.close()


def _short(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (f", … {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")


def _checkpoint_prefix(tf: Any, path: Path) -> str:
    """The checkpoint to read at ``path``: a directory's latest readable one, or the prefix itself, checked whole."""
    from hookrun.runner.run_dir.checkpoints import checkpoint_damage, find_checkpoint, newer_damaged

    if path.is_dir():
        try:
            found = find_checkpoint(tf, path.resolve())
        except SetupError as err:
            reason = str(err).split("; starting afresh")[0]
            raise PlacedError(FROM_KEY, f"{reason}; restore them, or give the prefix of a readable one") from None
        if found.path is None:
            raise PlacedError(FROM_KEY, f"{path}: no readable checkpoint in this directory; train that run first")
        damaged = newer_damaged(tf, path.resolve(), found.step)  # not an older model's weights without a word
        if damaged is not None:
            raise PlacedError(
                FROM_KEY,
                f"{damaged[0]}: the latest checkpoint there is damaged ({damaged[1]}); restore it, or give the "
                f"prefix of a readable one ({found.path}, global step {found.step})",
            )
        return found.path
    prefix = str(path.resolve())
    reason = checkpoint_damage(tf, prefix)
    if reason is not None:
        raise PlacedError(FROM_KEY, f"{prefix}: the checkpoint cannot be read ({reason}); give another one")
    return prefix


def _pin(tf: Any, path: Path) -> PinnedCheckpoint:
    """The checkpoint at ``path`` chosen (:func:`_checkpoint_prefix`) and pinned.

    A run directory's choice is made again when its files vanish before they are linked (that run
    deleted them: ``max_to_keep``), up to :data:`PIN_ATTEMPTS` times.

    Raises:
        PlacedError: at ``graph.warm_start.from``: as :func:`_checkpoint_prefix`; the checkpoint was
            deleted before it could be pinned; its files could not be copied.
    """
    for attempt in range(PIN_ATTEMPTS):
        prefix = _checkpoint_prefix(tf, path)
        try:
            return pin_checkpoint(prefix)
        except FileNotFoundError:
            if path.is_dir() and attempt + 1 < PIN_ATTEMPTS:
                continue
            raise PlacedError(
                FROM_KEY,
                f"{prefix}: the checkpoint was deleted while it was being read (a run still training keeps only "
                "its newest checkpoints, checkpoint_saver's max_to_keep); train again, or give the prefix of one "
                "that is kept",
            ) from None
        except OSError as err:
            raise PlacedError(
                FROM_KEY,
                f"{prefix}: cannot copy the checkpoint into {tempfile.gettempdir()} ({err.strerror or err}); free "
                "space there, or set TMPDIR to a directory on the checkpoint's file system (then it is hard-linked)",
            ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _left_out(names: list[str], loaded: set[str], pattern: str) -> str:
    """A ``vars`` that is ``pattern`` without ``names``: their top scopes where no loaded variable shares them."""
    scopes = {name.split("/")[0] + "/" for name in loaded if "/" in name}
    parts = []
    for name in names:
        scope = name.split("/")[0] + "/"
        part = re.escape(scope) if "/" in name and scope not in scopes else re.escape(name) + "$"
        if part not in parts:
            parts.append(part)
    return f"(?!{'|'.join(parts)}){pattern}"


def warm_start(tf: Any, graph: Any, settings: Any, base_dir: Path) -> WarmStartReport:
    """Make the graph's selected trainable variables initialise from the warm-start checkpoint.

    Call after the graph is built and before the session's ``Scaffold`` is finalized (its
    ``init_op`` then runs the checkpoint reads); only for a run directory without a checkpoint.
    Every check happens before anything is changed, so on an error the graph is untouched.

    Args:
        tf: the ``tensorflow`` module.
        graph: the built training graph.
        settings: ``graph.warm_start`` (:class:`hookrun.config_schemas.graph.WarmStartConfig`).
        base_dir: the config file's directory (what a relative ``from`` is relative to).

    The checkpoint is pinned (:func:`hookrun.runner.run_dir.checkpoints.pin_checkpoint`) before it is
    read, and the initializers read the pinned files: the caller keeps the report until the session
    has started and then calls :meth:`WarmStartReport.close`. On an error nothing stays pinned.

    Returns:
        What is loaded and what is not, with the pinned checkpoint.

    Raises:
        PlacedError: at ``graph.warm_start.from``: no such run or checkpoint, a damaged one, one deleted
            before it could be pinned, none of the selected variables in it, or one of them with another
            shape there; at ``graph.warm_start.vars``: the pattern selects no trainable variable, or it
            selects variables the checkpoint lacks (``WarmStartSettings`` raises ``ValueError`` for them;
            the message names them and a ``vars`` that leaves them out); at
            ``graph.warm_start.rename.<name>``: no such variable in the graph, one ``vars`` leaves out,
            or an old name the checkpoint lacks. All exit 2, before training.
    """
    path, reason = resolve_source_path(settings.from_, base_dir)
    if reason is not None:
        raise PlacedError(FROM_KEY, reason)
    pinned = _pin(tf, path)
    try:
        report = _apply(tf, graph, settings, pinned)
    except BaseException:
        pinned.close()
        raise
    report.pinned = pinned
    return report


def _apply(tf: Any, graph: Any, settings: Any, pinned: PinnedCheckpoint) -> WarmStartReport:
    """The checks and ``init_from_checkpoint`` of :func:`warm_start`, reading ``pinned``, naming its source."""
    prefix, read = pinned.source, pinned.prefix
    with graph.as_default():
        trainable = list(tf.compat.v1.trainable_variables())
    names = [v.op.name for v in trainable]
    pattern = re.compile(settings.vars)
    selected = [v for v in trainable if pattern.match(v.op.name)]
    if not selected:
        raise PlacedError(
            "graph.warm_start.vars",
            f"{settings.vars!r} matches none of the graph's trainable variables ({_short(names)}); it is matched "
            "from the start of the name: write e.g. `.*kernel` (`hookrun inspect CONFIG` lists the names)",
        )
    saved = dict(tf.train.list_variables(read))
    rename = dict(settings.rename)
    for new, old in rename.items():
        where = f"graph.warm_start.rename.{new}"
        if new not in names:
            raise PlacedError(
                where,
                f"the graph has no trainable variable {new!r}{did_you_mean(new, names)}; the keys are the new "
                "graph's names, the values the checkpoint's (`hookrun inspect CONFIG` lists the names)",
            )
        if not pattern.match(new):
            raise PlacedError(where, f"{new!r} is not matched by graph.warm_start.vars {settings.vars!r}; widen vars")
        if old not in saved:
            raise PlacedError(
                where, f"{old!r} is not in {prefix}{did_you_mean(old, saved)}; name a variable of that checkpoint"
            )
    present = [v for v in selected if rename.get(v.op.name, v.op.name) in saved]
    if not present:
        raise PlacedError(
            FROM_KEY,
            f"{prefix}: none of the variables to warm-start is in this checkpoint (graph: {_short(names)}; "
            f"checkpoint: {_short(sorted(saved))}); give a checkpoint of the same model, or map the names with "
            "graph.warm_start.rename",
        )
    missing = [v.op.name for v in selected if rename.get(v.op.name, v.op.name) not in saved]
    if missing:  # WarmStartSettings: "Tensor ... is not found in ... checkpoint"
        loaded = {v.op.name for v in present}
        raise PlacedError(
            "graph.warm_start.vars",
            f"{settings.vars!r} selects {len(missing)} variable(s) that {prefix} does not hold ({_short(missing)}"
            f"{did_you_mean(missing[0], saved)}); leave them out with vars: "
            f"{_left_out(missing, loaded, settings.vars)!r}, or map each to the checkpoint's name with "
            "graph.warm_start.rename",
        )
    try:
        check_checkpoint_fits(
            tf, read, present, rename,
            fix="leave those variables out with graph.warm_start.vars, or warm-start from a model of the same shape",
            shown=prefix,
        )
    except SetupError as err:
        raise PlacedError(FROM_KEY, str(err)) from None
    with graph.as_default():
        tf.compat.v1.train.init_from_checkpoint(read, {rename.get(v.op.name, v.op.name): v for v in present})
    matched = {v.op.name for v in selected}
    return WarmStartReport(
        checkpoint=prefix,
        loaded=[(v.op.name, rename.get(v.op.name, v.op.name)) for v in present],
        not_selected=[n for n in names if n not in matched],
    )
