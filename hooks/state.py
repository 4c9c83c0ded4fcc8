"""Hook state saved with each checkpoint and given back on restore: ``state_dict`` / ``load_state_dict``.

The protocol, modelled on Lightning's callback ``state_dict``/``load_state_dict``. Any hook, built-in
or custom, may define either or both:

- ``state_dict() -> dict``: the hook's state, JSON-serializable (numbers, strings, lists, dicts,
  None). Called after the step whose checkpoint was just written, once every hook's ``after_run``
  has run (or after every hook's ``end`` for the final checkpoint, or after every
  ``after_create_session`` for the checkpoint saved when a session starts), so the state matches
  the weights of that checkpoint.
- ``load_state_dict(state: dict) -> None``: called when a session is created from a checkpoint
  that has saved state (a resumed run, or a session recovered after a preemption), before any
  hook's ``after_create_session``, with what ``state_dict`` returned then.

Where: ``hook_state-<step>.json`` beside ``model.ckpt-<step>`` (the checkpoint's directory and
step), written atomically (renamed into place; not fsync-ed, as TensorFlow does not fsync the
checkpoint); a state file whose checkpoint the ``Saver`` has deleted
(``max_to_keep``) is deleted with it. Hooks are keyed by their place in ``hooks:`` (``hooks[2]``)
and class: a state is given back only to a hook of the same class at the same place.

This module imports no TensorFlow.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hookrun.common.files import atomic_write_text, loads_json
from hookrun.hooks import tf_internals

#: ``hook_state-<step>.json``, beside ``<basename>-<step>.index``.
STATE_PREFIX = "hook_state"
_STATE_FILE = re.compile(rf"^{STATE_PREFIX}-(\d+)\.json$")



def class_name(hook: Any) -> str:
    """The class a hook's saved state is keyed by: the user's own under ``session.steps_per_run`` > 1's wrapper."""
    from hookrun.hooks.custom.window import WindowedHook

    return type(hook.hook if isinstance(hook, WindowedHook) else hook).__name__

class HookStateError(RuntimeError):
    """A hook's ``state_dict()`` returned something JSON cannot hold, or a saved state file is damaged (exit 1)."""


def state_file(checkpoint_dir: Path, step: int) -> Path:
    """``<checkpoint_dir>/hook_state-<step>.json``."""
    return checkpoint_dir / f"{STATE_PREFIX}-{step}.json"


def has_state(hook: Any) -> bool:
    """True if ``hook`` takes part in the protocol (it has a callable ``state_dict`` or ``load_state_dict``)."""
    return callable(getattr(hook, "state_dict", None)) or callable(getattr(hook, "load_state_dict", None))


class HookStates:
    """Save and restore the state of the hooks that have one, tied to the checkpoint's step.

    The runner puts :attr:`loader` first and :attr:`writer` last in the session's hook list (both
    plain ``SessionRunHook``-shaped objects, not in ``hooks:``, not traced).

    Args:
        hooks: the run's hooks, in ``hooks:`` order.
        keys: per hook, its key in the state file (``hooks[2]``).
        global_step: the ``global_step`` variable (read once per created session).
        saver: ``() -> the Saver`` (the scaffold's, built in ``finalize()``); its ``last_checkpoints``
            tell which checkpoint was just written.
        checkpoint_dir: where the session restores from (the run directory).
    """

    def __init__(self, hooks: list[Any], keys: list[str], global_step: Any, saver: Any, checkpoint_dir: Path) -> None:
        self._stateful = [(key, hook) for key, hook in zip(keys, hooks, strict=True) if has_state(hook)]
        self._global_step = global_step
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._written: str | None = None  # the last checkpoint prefix whose state was written
        self._last_entry: Any = None  # the Saver's newest checkpoint record when last looked at
        self.loader = _Phase(after_create_session=self._load)
        self.writer = _Phase(after_create_session=self._save_new, after_run=self._save_new_step, end=self._save_new)

    def __bool__(self) -> bool:
        return bool(self._stateful)

    def _load(self, session: Any, coord: Any) -> None:
        """Give each hook its state saved with the checkpoint this session restored (if any)."""
        saver = self._saver()
        if saver is not None:
            checkpoints = saver.last_checkpoints
            self._written = checkpoints[-1] if checkpoints else None
        step = int(session.run(self._global_step))
        path = state_file(self._checkpoint_dir, step)
        if not path.exists():
            return
        try:
            saved = loads_json(path.read_text(encoding="utf-8"))["hooks"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise HookStateError(
                f"{path}: cannot read the hooks' saved state ({type(err).__name__}: {err}); "
                "delete the file to resume without it"
            ) from err
        for key, hook in self._stateful:
            entry = saved.get(key)
            load = getattr(hook, "load_state_dict", None)
            if entry is not None and entry.get("class") == class_name(hook) and callable(load):
                load(entry["state"])

    def _save_new_step(self, run_context: Any, run_values: Any) -> None:
        """After every step: under 1 us unless the Saver wrote a checkpoint (``last_checkpoints`` costs 3 us)."""
        saver = self._saver()
        if saver is None:
            return
        newest = tf_internals.newest_checkpoint_record(saver)
        if newest is None or newest is self._last_entry or newest == self._last_entry:
            return
        self._last_entry = newest
        self._save_new(run_context.session)

    def _save_new(self, session: Any, coord: Any = None) -> None:
        """Write the hooks' state if a checkpoint was written since the last call; drop orphaned states."""
        saver = self._saver()
        if saver is None:
            return
        checkpoints = saver.last_checkpoints
        if not checkpoints or checkpoints[-1] == self._written:
            return
        prefix = checkpoints[-1]
        self._written = prefix
        head, _, step = prefix.rpartition("-")
        if not step.isdigit():
            return
        directory = Path(head).parent
        states: dict[str, Any] = {}
        for key, hook in self._stateful:
            state_dict = getattr(hook, "state_dict", None)
            if callable(state_dict):
                states[key] = {"class": class_name(hook), "state": state_dict()}
        try:
            text = json.dumps({"step": int(step), "checkpoint": Path(prefix).name, "hooks": states}, indent=1)
        except (TypeError, ValueError) as err:
            raise HookStateError(f"a hook's state_dict() is not JSON-serializable: {err}") from err
        # No fsync: TensorFlow's Saver writes the checkpoint this state belongs to (data, index, meta and the
        # `checkpoint` file) without one, so an fsync here (2-6 ms a save, most of this method) made the state
        # no safer than its weights. The rename still leaves the whole file or none after a crash of the run.
        atomic_write_text(state_file(directory, int(step)), text + "\n", durable=False)
        basename = Path(head).name
        for path in directory.glob(f"{STATE_PREFIX}-*.json"):
            match = _STATE_FILE.match(path.name)
            if match and not (directory / f"{basename}-{match.group(1)}.index").exists():
                path.unlink(missing_ok=True)


class _Phase:
    """A hook that calls the given functions for the methods it is given; the rest do nothing."""

    def __init__(self, after_create_session: Any = None, after_run: Any = None, end: Any = None) -> None:
        self._after_create_session = after_create_session
        self._after_run = after_run
        self._end = end

    def begin(self) -> None:
        """Nothing."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Call the given function, if any."""
        if self._after_create_session is not None:
            self._after_create_session(session, coord)

    def before_run(self, run_context: Any) -> None:
        """Ask for nothing."""
        return None

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Call the given function, if any."""
        if self._after_run is not None:
            self._after_run(run_context, run_values)

    def end(self, session: Any) -> None:
        """Call the given function, if any."""
        if self._end is not None:
            self._end(session)
