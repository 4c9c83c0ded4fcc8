"""Who owns which path of a run directory: one registry, asked by every writer (no TensorFlow).

A run directory holds the runner's own files (``config.yaml``, ``preprocessing.json``, ...), the
checkpoints, ``best/``, ``eval/`` and the files each configured hook writes (``history_saver``'s
``filename``, ``checkpoint_saver``'s ``checkpoint_dir``, an ``output_dir``). :data:`RUN_ENTRIES` lists the
first kind; each hook config names its own paths (``HookConfig.run_paths``). Then:

- :func:`hook_path_issues` refuses, before TensorFlow (``validate`` and the start of ``train``), a hook
  path that leaves the run directory, that another hook also writes, or that is one of the run's own
  (``history_saver`` ``filename: preprocessing.json``; ``checkpoint_dir: best`` beside ``keep_best``);
- :func:`run_owner` tells ``predict``/``export`` whether an ``--output`` inside a run directory would
  replace something the run owns.

The registry is documented in ``docs/run-directory.md`` (a test keeps the two in step).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Sequence
from typing import Any, Literal

#: A hook's config (``hookrun.config_schemas.hook_base.HookConfig``, which imports this module: typed loosely
#: here so the two modules import in one direction).
HookConfig = Any

#: What a path is: a ``file``; a directory written only by its owner (``dir``: ``best/``); a directory of
#: checkpoints (``checkpoints``: may also hold event files); a directory of TensorFlow event files
#: (``events``: shared by every event writer, whose file names are unique).
PathKind = Literal["file", "dir", "checkpoints", "events"]


@dataclasses.dataclass(frozen=True)
class RunEntry:
    """One kind of path a run directory holds.

    Attributes:
        name: how the docs name it (``model.ckpt-<step>.*``).
        pattern: a regular expression matching its name (one path component), or a directory's name.
        kind: see :data:`PathKind`.
        owner: who writes it (``the runner``, ``checkpoint_saver``, ``hookrun evaluate``).
        hook: the hook type whose config may name this path as its own (``history_saver`` for
            ``history.csv``), or None.
        anywhere: True when the name is the run's in every directory a checkpoint or event writer uses
            (checkpoint and event files), not only at the top of the run directory.
    """

    name: str
    pattern: str
    kind: PathKind
    owner: str
    hook: str | None = None
    anywhere: bool = False

    def matches(self, component: str) -> bool:
        """Whether the file or directory name ``component`` is this entry."""
        return re.fullmatch(self.pattern, component) is not None


#: Where training's event files go, relative to the run directory (``summary_saver`` and ``step_counter`` by
#: default, and ``checkpoint_saver``'s graph): TensorBoard names a run by its directory relative to
#: ``--logdir``, so ``tensorboard --logdir runs`` shows this run as ``<run>/train`` beside ``<run>/eval``.
TRAIN_EVENT_DIR = "train"

#: Every path hookrun keeps in a run directory, besides what the configured hooks name.
RUN_ENTRIES: tuple[RunEntry, ...] = (
    RunEntry("config.yaml", re.escape("config.yaml"), "file", "the runner (the resolved config)"),
    RunEntry("preprocessing.json", re.escape("preprocessing.json"), "file", "the runner (the fitted preprocessing)"),
    RunEntry("summary.json", r"summary(-.+)?\.json", "file", "the runner (the run's status)"),
    RunEntry("trace.jsonl", r"trace(-.+)?\.jsonl", "file", "the runner (--trace)"),
    RunEntry(".hookrun.lock", re.escape(".hookrun.lock"), "file", "the runner (the training process's PID)"),
    RunEntry("hook_state-<step>.json", r"hook_state-\d+\.json", "file", "the runner (the hooks' state)"),
    RunEntry("history.csv", re.escape("history.csv"), "file", "history_saver", hook="history_saver"),
    RunEntry("checkpoint", "checkpoint", "file", "checkpoint_saver (the checkpoint state file)", anywhere=True),
    RunEntry(
        "model.ckpt-<step>.*",
        r".+-\d+\.(index|meta|data-\d+-of-\d+)",
        "file",
        "checkpoint_saver (a checkpoint)",
        anywhere=True,
    ),
    RunEntry("graph.pbtxt", re.escape("graph.pbtxt"), "file", "checkpoint_saver (the graph)", anywhere=True),
    RunEntry(
        "events.out.tfevents.*", r"events\.out\.tfevents\..*", "file", "TensorFlow's event writers", anywhere=True
    ),
    RunEntry("eval-<step>.json", r"eval-\d+(-.*)?\.json", "file", "hookrun evaluate"),
    RunEntry("best/", "best", "dir", "early_stopping (keep_best)", hook="early_stopping"),
    RunEntry("eval/", "eval", "events", "evaluation (its event files)", hook="evaluation"),
    RunEntry(
        "train/",
        TRAIN_EVENT_DIR,
        "events",
        "training's event files (summary_saver, step_counter, checkpoint_saver's graph)",
    ),
    RunEntry(
        "temporary files",
        r"(.+\.tmp[0-9a-f]{32}|.+\.tempstate\d*|\..+\.[a-z0-9_]{8}\.tmp|\.write-probe\.[a-z0-9_]{8})",
        "file",
        "a writer, until it renames it (removed at the next start)",
        anywhere=True,
    ),
)


def _entry(component: str, top: bool) -> RunEntry | None:
    for entry in RUN_ENTRIES:
        if (top or entry.anywhere) and entry.matches(component):
            return entry
    return None


def run_owner(relative: str) -> RunEntry | None:
    """The registry entry owning ``relative`` (a path inside a run directory), or None when the run owns none.

    A path inside ``best/`` or ``eval/`` is owned by that directory's entry; the run directory itself
    (``"."``) is owned by the runner.

    Args:
        relative: the path relative to the run directory, ``/``-separated (``best/best.json``).
    """
    parts = [p for p in posixpath.normpath(relative).split("/") if p not in ("", ".")]
    if not parts:
        return RunEntry("the run directory", "", "dir", "the runner")
    top = _entry(parts[0], top=True)
    if top is not None and (len(parts) == 1 or top.kind != "file"):
        return top
    return _entry(parts[-1], top=False) if len(parts) > 1 else None


@dataclasses.dataclass(frozen=True)
class HookPath:
    """A path a configured hook writes, relative to the run directory.

    Attributes:
        key: its field under the hook (``filename``).
        path: as configured (``history.csv``, ``.`` for the run directory itself).
        kind: see :data:`PathKind`.
        confined: True when it must stay inside the run directory (a file name); False when a place
            outside it is the user's choice (an ``output_dir``).
        label: how messages show it when the key's value is not the path (``best/``), else None: ``repr(path)``.
        glob_free: True for a part of a checkpoint path (``checkpoint_basename``): no ``*``, ``?``, ``[``.
        owned: False for a name only checked to stay in the run directory, not a path of its own (the
            ``checkpoint_basename`` prefix: two savers in two directories may share it).
    """

    key: str
    path: str
    kind: PathKind
    confined: bool = True
    label: str | None = None
    glob_free: bool = False
    owned: bool = True

    def shown(self) -> str:
        """The path as messages show it."""
        return self.label or repr(self.path)


def confinement_problem(value: str, kind: PathKind, glob_free: bool = False) -> str | None:
    """Why ``value`` (a hook's file name or directory) is not a path inside the run directory, or None.

    Refused: an empty name, an absolute path, a ``..`` part, a NUL or backslash (a Windows separator,
    read differently elsewhere), for ``checkpoints`` a glob character (TensorFlow globs checkpoint
    paths), and for a ``file`` any directory part (``a/h.csv``: hook files are
    written in the run directory itself, so ``validate`` and ``train`` accept the same names).
    """
    if value.strip() == "":
        return "is empty; give a file name in the run directory"
    if "\0" in value or "\\" in value:
        return "holds a NUL or a backslash; give a plain name"
    if value.startswith("/"):
        return "is an absolute path, outside the run directory; give a name inside it"
    if (glob_free or kind == "checkpoints") and any(c in value for c in "*?["):
        return (
            "holds a glob character (`*`, `?`, `[`), which TensorFlow reads as a pattern in checkpoint paths "
            "(its checkpoints would not be found again); give a plain name"
        )
    parts = value.split("/")
    if ".." in parts:
        return "has a `..` part, leading outside the run directory; give a name inside it"
    if kind == "file" and (len(parts) > 1 or value in (".",)):
        return "is a path, not a file name: hook files are written in the run directory itself; give a plain name"
    return None


def _normal(path: str) -> str:
    return posixpath.normpath(path) if path else "."


def _inside(inner: str, outer: str) -> bool:
    """``inner`` is ``outer`` or below it (both normalized, relative)."""
    return outer == "." or inner == outer or inner.startswith(outer + "/")


def _compatible(a: PathKind, b: PathKind) -> bool:
    """Two directories of these kinds may be one: event writers share, checkpoints sit beside events."""
    return {a, b} <= {"events", "checkpoints"} and {a, b} != {"checkpoints"}


def hook_path_issues(hooks: Sequence[HookConfig]) -> list[tuple[tuple[str | int, ...], str]]:
    """Every clash between the hooks' paths, the run's own paths and the run directory's bounds.

    Args:
        hooks: the ``hooks:`` entries, in order.

    Returns:
        ``(YAML location, message)`` per problem, naming the other key: a confined path outside the run
        directory; a path two hooks write (at the later key): one file, a file that is the other's
        directory, one directory (unless both only hold event files, or event files and checkpoints),
        a path inside a directory only its owner writes (``checkpoint_dir: best`` beside
        ``early_stopping`` ``keep_best``); else a hook path that is one of the run's own
        (:data:`RUN_ENTRIES`: ``filename: preprocessing.json``). Two ``checkpoint_saver`` hooks on one
        directory spelled alike are ``checkpoint_saver``'s own rule (``HookConfig.list_issues``); spelled
        differently (``ckpt`` and ``./ckpt/``), they are refused here.
    """
    issues: list[tuple[tuple[str | int, ...], str]] = []
    claims: list[tuple[int, HookConfig, HookPath, str]] = []
    for index, hook in enumerate(hooks):
        for claim in hook.run_paths():
            problem = confinement_problem(claim.path, claim.kind, claim.glob_free)
            if problem is not None and (claim.confined or claim.path.strip() == ""):
                issues.append((("hooks", index, claim.key), f"{claim.path!r} {problem}"))
            elif problem is None and claim.owned:  # else outside the run directory: the user's own place
                claims.append((index, hook, claim, _normal(claim.path)))
    reported: set[int] = set()
    for later, (index, _hook, claim, path) in enumerate(claims):
        for earlier, (other_index, other, other_claim, other_path) in enumerate(claims[:later]):
            if claim.kind == other_claim.kind == "checkpoints" and claim.path == other_claim.path:
                continue  # checkpoint_saver's own rule names it (``list_issues``); `./ckpt` and `ckpt` are ours
            message = _pair_clash(path, claim.kind, other_path, other_claim.kind)
            if message is not None:
                issues.append(
                    (
                        ("hooks", index, claim.key),
                        f"{claim.shown()} {message} hooks[{other_index}].{other_claim.key} "
                        f"({other.display_name()}: {other_claim.shown()}); give one of them another path",
                    )
                )
                reported |= {later, earlier}
                break
    for number, (index, hook, claim, path) in enumerate(claims):
        clash = None if number in reported else _registry_clash(path, claim.kind, str(getattr(hook, "type", "")))
        if clash is not None:
            issues.append((("hooks", index, claim.key), f"{claim.shown()} is {clash}; choose another path"))
    return issues


def _registry_clash(path: str, kind: PathKind, hook_type: str) -> str | None:
    """How ``path`` (normalized) of a hook of ``hook_type`` collides with the run's own paths, or None."""
    if path == ".":
        return None if kind != "file" else "the run directory itself"
    parts = path.split("/")
    for depth, part in enumerate(parts, start=1):
        entry = _entry(part, top=depth == 1)
        if entry is None:
            continue
        whole = depth == len(parts)
        if entry.kind == "file" and not whole:
            continue  # a run file's name used as a directory below the top: checked at its last part
        if whole and entry.hook == hook_type:
            return None  # its own default (history_saver: history.csv; evaluation: eval)
        if entry.kind == "events" and kind in ("events", "checkpoints"):
            return None  # event files and checkpoints may share eval/
        if not whole:
            return f"inside the run directory's {entry.name}, which {entry.owner} writes"
        return f"the run directory's {entry.name}, which {entry.owner} writes"
    return None


def _pair_clash(path: str, kind: PathKind, other_path: str, other_kind: PathKind) -> str | None:
    """How two hook paths (normalized) collide, or None: the message's middle, before the other key."""
    if kind == "file" and other_kind == "file":
        return "is also written by" if path == other_path else None
    if kind == "file" or other_kind == "file":
        file_path, dir_path = (path, other_path) if kind == "file" else (other_path, path)
        if file_path == dir_path or (file_path != "." and _inside(dir_path, file_path)):
            return "is a file where there is a directory of" if kind == "file" else "is a directory over the file of"
        return None
    if _compatible(kind, other_kind):
        return None
    if path == other_path:
        return "is also the directory of"
    inner = other_path != "." and _inside(path, other_path)
    outer = path != "." and _inside(other_path, path)
    if (inner and other_kind == "dir") or (outer and kind == "dir"):
        return "overlaps the directory of"
    return None
