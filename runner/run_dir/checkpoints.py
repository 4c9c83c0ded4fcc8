"""Which checkpoint a run directory resumes from, found from its own files, and its ``checkpoint`` state file.

TensorFlow resumes from the checkpoint its ``checkpoint`` state file names (``tf.train.latest_checkpoint``),
and starts from step 0 when that file is missing, damaged or names files that are gone: the next
saves would then overwrite the run's checkpoints. An older hookrun wrote absolute paths there, so a
moved run directory could not resume, and a copy resumed from the original's files.

:func:`find_checkpoint` decides from the files themselves (``<prefix>-<step>.index`` and its data
shards, every tensor read once, so a truncated or zeroed file is caught here rather than in the
restore); :func:`write_checkpoint_state` rewrites the state file with paths relative to the run
directory, naming that checkpoint, before the session restores from it. The state file's own
choice comes first when it reads back whole; the files decide only when it does not.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError
from hookrun.common.files import atomic_write_text

#: TensorFlow's state file in a checkpoint directory (``latest_filename``'s default).
CHECKPOINT_STATE = "checkpoint"

_INDEX = re.compile(r"^(?P<prefix>.+)-(?P<step>\d+)\.index$")


@dataclass
class Resume:
    """Where a run directory resumes from.

    Attributes:
        path: the absolute prefix of the checkpoint to restore (``/runs/x/model.ckpt-100``), or None
            for a fresh start (the directory holds no checkpoint).
        step: its ``global_step`` (0 for a fresh start).
        listed: the checkpoints the state file lists, by name relative to the run directory, oldest
            first, ending with ``path``'s (the saver's ``max_to_keep`` rotation continues from them).
        notes: what was recovered, for the user (a missing or stale state file, damaged checkpoints).
        state_text: the ``checkpoint`` state file's text to write, or None to remove a stale one.
        rewrite: the state file on disk differs from ``state_text``.
    """

    path: str | None = None
    step: int = 0
    listed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    state_text: str | None = None
    rewrite: bool = False


def _first_line(err: BaseException) -> str:
    text = str(getattr(err, "message", None) or err).strip()
    return (text.splitlines() or [type(err).__name__])[0][:200]


def checkpoint_damage(tf: Any, prefix: str) -> str | None:
    """Why the checkpoint ``prefix`` cannot be restored, or None when every tensor in it reads back.

    Reads the index and every tensor of the data shards once (TensorFlow checks each tensor's
    CRC32C as it reads), so a truncated, zeroed or missing file is found here.

    Args:
        tf: the ``tensorflow`` module.
        prefix: a checkpoint prefix, e.g. ``/runs/x/model.ckpt-100``.
    """
    try:
        reader = tf.compat.v1.train.NewCheckpointReader(prefix)
        dtypes = reader.get_variable_to_dtype_map()
        for key in reader.get_variable_to_shape_map():
            if dtypes.get(key) != tf.variant:  # the input's saved position (Python cannot read a variant)
                reader.get_tensor(key)
    except Exception as err:  # TensorFlow raises OpErrors, ValueError or RuntimeError for damaged files
        return _first_line(err)
    return None


def _read_state(tf: Any, path: Path) -> tuple[Any, str | None]:
    """The parsed state file (a ``CheckpointState``) or None, and why it could not be read (or None)."""
    from google.protobuf import text_format

    empty = tf.compat.v1.train.generate_checkpoint_state_proto("/", "x")
    empty.Clear()
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), encoding="utf-8") as handle:
            text = handle.read(1 << 20)
        return text_format.Parse(text, empty), None
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError, text_format.ParseError) as err:
        return None, _first_line(err)


def _state_text(tf: Any, run_dir: Path, listed: list[str]) -> str:
    from google.protobuf import text_format

    proto = tf.compat.v1.train.generate_checkpoint_state_proto(str(run_dir), listed[-1], list(listed))
    return text_format.MessageToString(proto)


def newer_damaged(tf: Any, directory: Path, step: int) -> tuple[str, str] | None:
    """The newest checkpoint in ``directory`` with a step above ``step`` that is damaged, and why, or None.

    :func:`find_checkpoint` passes over a damaged checkpoint to an older one, which suits a resumed run
    (it trains on, and says so); a command that only reads the model (predict, export, evaluate, a
    warm start) would use an older model's weights without a word, so it refuses with this.

    Args:
        tf: the ``tensorflow`` module.
        directory: the directory of checkpoints (absolute).
        step: the step of the checkpoint chosen.

    Returns:
        ``(prefix, reason)`` of the newest damaged one above ``step``, or None.
    """
    newer = []
    for entry in directory.iterdir():
        found = _INDEX.match(entry.name)
        if found and int(found.group("step")) > step and entry.is_file():
            newer.append((int(found.group("step")), str(directory / entry.name[: -len(".index")])))
    for _, prefix in sorted(newer, reverse=True):
        reason = checkpoint_damage(tf, prefix)
        if reason is not None and Path(prefix + ".index").exists():  # not deleted meanwhile (max_to_keep)
            return prefix, reason
    return None


def find_checkpoint(tf: Any, run_dir: Path) -> Resume:
    """The checkpoint ``run_dir`` resumes from, checked against its files (reads only).

    Every ``<prefix>-<step>.index`` in ``run_dir`` is a candidate: first the one the state file
    names (by file name, so an absolute path into the directory's old place still counts; it is
    the latest TensorFlow recorded as written whole), then the others, newest step first. The
    first whose tensors all read back (:func:`checkpoint_damage`) is chosen, and each damaged one
    tried before it is named in a note. When the state file is missing, unreadable, names missing
    files or points into another directory (a moved or copied run directory), a note says what
    was used instead.

    Args:
        tf: the ``tensorflow`` module.
        run_dir: the run directory (absolute; it may not exist).

    Returns:
        The checkpoint to resume from (``path`` None when there is none).

    Raises:
        SetupError: checkpoint files exist but none can be read (exit 2): starting afresh would
            overwrite them; or the directory cannot be listed.
    """
    resume = Resume()
    if not run_dir.is_dir():
        return resume
    candidates: list[tuple[int, str]] = []
    try:
        for entry in os.scandir(run_dir):
            found = _INDEX.match(entry.name)
            if found and entry.is_file():
                candidates.append((int(found.group("step")), entry.name[: -len(".index")]))
    except OSError as err:
        raise SetupError(
            f"{run_dir}: cannot read the run directory ({err.strerror or err}); choose another `--run-dir`"
        ) from None
    candidates.sort(reverse=True)
    state_path = run_dir / CHECKPOINT_STATE
    state, unreadable = _read_state(tf, state_path)
    named = state.model_checkpoint_path if state is not None else ""

    # The state file's own choice first, when it names a file here (TensorFlow records a checkpoint
    # there only once it is written whole); then every other, newest first.
    recorded = os.path.basename(named) if named else ""
    order = sorted(candidates, key=lambda c: (c[1] != recorded, -c[0]))
    damaged: list[tuple[str, str]] = []
    for step, name in order:
        reason = checkpoint_damage(tf, str(run_dir / name))
        if reason is None:
            resume.path = str(run_dir / name)
            resume.step = _global_step(tf, resume.path, step)
            break
        damaged.append((name, reason))
    for name, reason in damaged:
        resume.notes.append(f"checkpoint {run_dir / name} is damaged ({reason}); not resuming from it")
    if resume.path is None:
        if damaged:
            names = ", ".join(name for name, _ in damaged)
            raise SetupError(
                f"{run_dir}: no checkpoint in this run directory can be read ({names}: {damaged[0][1]}); "
                "starting afresh would overwrite them: move them out of the way, or choose another `--run-dir`"
            )
        if state is not None or unreadable is not None:
            resume.notes.append(f"{state_path} names no checkpoint file that exists; starting at step 0")
            resume.rewrite = True  # removed: TensorFlow would try to restore what it names
        return resume

    chosen = os.path.basename(resume.path)
    if unreadable is not None:
        resume.notes.append(f"{state_path} is damaged ({unreadable}); resuming from {chosen}, found among the files")
    elif state is None:
        resume.notes.append(f"{state_path} was missing; resuming from {chosen}, found among the files")
    elif not named:
        resume.notes.append(f"{state_path} names no checkpoint; resuming from {chosen}, found among the files")
    elif os.path.isabs(named) and os.path.realpath(os.path.dirname(named)) != str(run_dir):
        resume.notes.append(
            f"{state_path} pointed into {os.path.dirname(named)} (the run directory was moved or copied); "
            f"resuming from this directory's {chosen}"
        )
    elif os.path.basename(named) != chosen and not damaged:
        resume.notes.append(f"{state_path} named {named}, which is missing; resuming from {chosen}")

    steps = {name: step for step, name in candidates}
    listed = []
    for path in list(state.all_model_checkpoint_paths) if state is not None else []:
        name = os.path.basename(path)
        if name in steps and steps[name] < steps[chosen] and name not in listed:
            listed.append(name)
    listed.sort(key=steps.__getitem__)
    resume.listed = [*listed, chosen]
    resume.state_text = _state_text(tf, run_dir, resume.listed)
    try:
        current = state_path.read_text(encoding="utf-8") if state_path.is_file() else None
    except (OSError, UnicodeDecodeError):
        current = None
    resume.rewrite = current != resume.state_text
    return resume


def _global_step(tf: Any, prefix: str, step_in_name: int) -> int:
    try:
        return int(tf.train.load_variable(prefix, "global_step"))
    except Exception:  # no global_step variable in it: trust the name
        return step_in_name


def write_checkpoint_state(run_dir: Path, resume: Resume) -> None:
    """Rewrite (or remove) ``run_dir``'s ``checkpoint`` state file as :func:`find_checkpoint` decided.

    Call it while holding the run directory's lock, before the session restores.

    Raises:
        RunDirWriteError: it could not be written.
    """
    if not resume.rewrite:
        return
    path = run_dir / CHECKPOINT_STATE
    if resume.state_text is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write_text(path, resume.state_text)


def check_checkpoint_fits(
    tf: Any,
    prefix: str,
    variables: list[Any],
    saved_names: dict[str, str] | None = None,
    fix: str = "give a checkpoint of this run",
    shown: str | None = None,
) -> None:
    """Check that the checkpoint holds every variable, with the same shape, before restoring it.

    ``Saver.restore`` into resource variables does not check shapes: a ``[5, 4]`` kernel
    restores into a ``[5, 8]`` variable, which then silently becomes ``[5, 4]``.

    Args:
        tf: the ``tensorflow`` module.
        prefix: the checkpoint prefix.
        variables: the graph's variables to restore.
        saved_names: graph variable name -> its name in the checkpoint, where they differ
            (a warm start's ``rename``); default: the same names.
        fix: the end of the message: what the user should do.
        shown: how the message names the checkpoint (default ``prefix``; a pinned copy names its source).

    Raises:
        SetupError: a variable is missing from the checkpoint or has another shape there (exit 2),
            naming the first few.
    """
    try:
        saved = dict(tf.train.list_variables(prefix))
    except tf.errors.OpError:
        raise_if_vanished(prefix)
        raise
    renamed = saved_names or {}
    problems = []
    for variable in variables:
        name = variable.op.name
        there = renamed.get(name, name)
        label = name if there == name else f"{name} (as {there})"  # not `shown`: that names the checkpoint
        shape = variable.shape.as_list()
        if there not in saved:
            problems.append(f"{label} is not in it")
        elif list(saved[there]) != shape:
            problems.append(f"{label} is {list(saved[there])} there, {shape} in the run's graph")
    if problems:
        raise SetupError(
            f"{shown or prefix}: this checkpoint does not fit the run's graph.builder ({'; '.join(problems[:3])}"
            f"{'; ...' if len(problems) > 3 else ''}); {fix}"
        )


@contextlib.contextmanager
def restore_errors(tf: Any, prefix: str, fix: str | None = None) -> Iterator[None]:
    """Turn a failed restore of ``prefix`` (inside the ``with``) into the one-line error a user can act on.

    For ``Saver.restore`` and sessions that restore (``ChiefSessionCreator``): a ``NotFoundError`` or
    ``InvalidArgumentError`` is either the checkpoint deleted meanwhile (:func:`raise_if_vanished`) or a
    checkpoint that does not fit the graph, named by TensorFlow's first line.

    Args:
        tf: the ``tensorflow`` module.
        prefix: the checkpoint prefix being restored.
        fix: what the user should do, appended to the message (``; <fix>``), or None.

    Raises:
        SetupError: the checkpoint vanished, or it does not fit the run's graph.builder (exit 2).
    """
    try:
        yield
    except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError) as err:
        raise_if_vanished(prefix)
        reason = restore_error_line(str(err.message))
        message = f"{prefix}: this checkpoint does not fit the run's graph.builder ({reason})"
        raise SetupError(message + (f"; {fix}" if fix else "")) from None


#: The first line of ``Saver.restore``'s wrapper around the real error, which ends ``Original error:``.
_RESTORE_WRAPPER = "Restoring from checkpoint failed."
_NOT_TELLING = ("Graph execution error", "Detected at node", "Node:", "[[", "Original stack trace", "File ")


def restore_error_line(message: str) -> str:
    """The line of a failed restore's message that says what is wrong (``Key dense/bias not found in checkpoint``).

    ``Saver.restore`` wraps the op error in a paragraph ending ``Original error:``, then TensorFlow's
    ``Graph execution error:``, a Python stack and ``Node: ...``; the cause comes after those.

    Args:
        message: the error's message.

    Returns:
        The telling line, else the message's first line.
    """
    lines = message.strip().splitlines()
    if lines and lines[0].startswith(_RESTORE_WRAPPER):
        for index, line in enumerate(lines):
            if "Original error:" in line:
                lines = lines[index + 1 :]
                break
    for line in lines:
        if line.strip() and not line[0].isspace() and not line.startswith(_NOT_TELLING):
            return line.strip()
    return lines[0].strip() if lines else message.strip()


def raise_if_vanished(prefix: str) -> None:
    """Raise the one-line error for a checkpoint deleted while this command read it, if it is gone.

    A run still training keeps only its newest ``max_to_keep`` checkpoints: the one chosen as
    ``latest`` may be deleted between choosing and restoring it.

    Raises:
        SetupError: ``<prefix>.index`` no longer exists (exit 2).
    """
    if not Path(prefix + ".index").exists():
        raise SetupError(
            f"{prefix}: the checkpoint was deleted while it was being read (a run still training keeps only its "
            "newest checkpoints, checkpoint_saver's max_to_keep); run the command again, or give --checkpoint "
            "of one that is kept"
        )


#: A checkpoint's data shard: ``<prefix>.data-00000-of-00002``.
_SHARD = re.compile(r"\.data-(?P<index>\d+)-of-(?P<count>\d+)$")


class PinnedCheckpoint:
    """A private copy of one checkpoint's files, which another run's ``max_to_keep`` cannot delete.

    Made by :func:`pin_checkpoint`. The directory is removed by :meth:`close`, or failing that when
    the object is garbage-collected or the interpreter exits (``weakref.finalize``); a ``kill -9``
    leaves it in the temporary directory.

    Attributes:
        source: the checkpoint prefix pinned (absolute).
        prefix: the same checkpoint's prefix in the private directory: read this one.
        directory: the private directory (mode 0700).
        linked: the files were hard links (False: at least one was copied).
    """

    def __init__(self, source: str, directory: Path) -> None:
        self.source = source
        self.directory = directory
        self.prefix = str(directory / os.path.basename(source))
        self.linked = True
        self._remove = weakref.finalize(self, shutil.rmtree, str(directory), ignore_errors=True)

    def close(self) -> None:
        """Remove the private directory (again: nothing)."""
        self._remove()


def _checkpoint_files(prefix: str) -> list[str]:
    """The names of ``prefix``'s ``.index`` and every data shard its names promise.

    Raises:
        FileNotFoundError: the index or a shard is missing (deleted meanwhile).
    """
    directory, stem = os.path.split(prefix)
    index = stem + ".index"
    shards: list[str] = []
    count = None
    names = os.listdir(directory or ".")
    for name in names:
        found = _SHARD.search(name)
        if found and name[: found.start()] == stem:
            shards.append(name)
            count = int(found.group("count"))
    if index not in names or count is None or len(shards) != count:
        raise FileNotFoundError(errno.ENOENT, "checkpoint files missing", prefix)
    return [index, *sorted(shards)]


def pin_checkpoint(prefix: str, parent: str | None = None) -> PinnedCheckpoint:
    """Hard-link (or, across file systems or where links are refused, copy) a checkpoint into a private directory.

    A run still training deletes its older checkpoints (``tf.compat.v1.train.Saver``'s
    ``max_to_keep``): one chosen here may be gone by the time a session reads it. The ``.index`` and
    every ``.data-*`` shard are linked into a fresh ``tempfile.mkdtemp`` directory, so the chosen
    checkpoint stays readable, unchanged, until :meth:`PinnedCheckpoint.close`. A hard link costs
    no space; a copy is opened before it is read, so a file deleted while it is copied is still
    copied whole.

    Args:
        prefix: the checkpoint prefix (absolute), e.g. ``/runs/x/model.ckpt-100``.
        parent: where the private directory is made (default: the OS temporary directory,
            ``TMPDIR``); links need it on the checkpoint's file system, else the files are copied.

    Returns:
        The pinned checkpoint; read :attr:`PinnedCheckpoint.prefix`.

    Raises:
        FileNotFoundError: a file of the checkpoint is missing or was deleted before it was pinned
            (nothing is left behind).
        OSError: a file could not be copied (no space, unreadable; nothing is left behind).
    """
    names = _checkpoint_files(prefix)
    pinned = PinnedCheckpoint(prefix, Path(tempfile.mkdtemp(prefix="hookrun-pinned-", dir=parent)))
    source_dir = os.path.dirname(prefix)
    try:
        for name in names:
            source, target = os.path.join(source_dir, name), str(pinned.directory / name)
            try:
                os.link(source, target)
            except FileNotFoundError:
                raise
            except OSError:  # another file system (EXDEV), links refused (EPERM, protected_hardlinks)
                shutil.copyfile(source, target)
                pinned.linked = False
    except BaseException:
        pinned.close()
        raise
    return pinned
