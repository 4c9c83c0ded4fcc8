"""Phase 2, the run directory's lifecycle: locked before TensorFlow loads, written once the run is prepared.

- :func:`run_dir_for`: where the run goes;
- :func:`held_run_dir`: the lock (an existing directory is locked before TensorFlow is imported, a new
  one as soon as it is created), held until the run ends;
- :func:`begin_run`: once :func:`hookrun.runner.training.prepare.prepare` has checked everything, the
  directory is created and the run's own files written (the resolved ``config.yaml``,
  ``preprocessing.json``, ``summary.json`` saying ``running``), after a refused config change raises.

What each process writes is the role's answer (:attr:`hookrun.runner.roles.Role.is_chief`): the chief
owns the run directory, another worker of a cluster writes only its own files.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console

from hookrun.common.errors import SetupError
from hookrun.common.files import atomic_write_text
from hookrun.config_schemas.loader import LoadedConfig
from hookrun.config_schemas.run_files import TRAIN_EVENT_DIR
from hookrun.runner.graph.device import describe_tensorflow
from hookrun.runner.roles import Role
from hookrun.runner.run_dir.checkpoints import write_checkpoint_state
from hookrun.runner.run_dir.config_change import compare_configs
from hookrun.runner.run_dir.directory import (
    RunDirLock,
    check_adoptable,
    check_event_dirs,
    clean_temporary_files,
    prepare_run_dir,
    read_saved_config,
)
from hookrun.runner.run_dir.saved_config import self_contained_yaml
from hookrun.runner.run_dir.status import StatusRecord, begin_record
from hookrun.runner.training.prepare import PREPROCESSING_FILE, PreparedRun


def run_dir_for(loaded: LoadedConfig, override: Path | None = None) -> Path:
    """The run directory: ``override``, else ``session.run_dir`` (relative to the config), else ``runs/<name>``.

    ``runs/<name>`` is relative to the current directory, like TensorFlow's ``model_dir``.
    """
    if override is not None:
        return override
    if loaded.config.session.run_dir is not None:
        return loaded.base_dir / loaded.config.session.run_dir
    return Path("runs") / loaded.config.name


@contextlib.contextmanager
def held_run_dir(directory: Path, role: Role) -> Iterator[Callable[[], None]]:
    """Hold the run directory's lock for the run; yield what creates (and then locks) a new directory.

    An existing run directory is locked before TensorFlow is even imported, so a second ``hookrun train``
    on it fails at once; a new one is locked as soon as it is created (by the yielded callable, which
    :func:`begin_run` calls). Only the chief locks it (another worker of a cluster writes only its own
    files), and only the chief refuses a directory that is no run directory.

    Raises:
        SetupError: the directory is not one hookrun may adopt, or another process holds its lock (exit 2).
    """
    if role.is_chief:  # other tasks write only their own files beside the chief's
        check_adoptable(directory)
    with contextlib.ExitStack() as held:
        locked = directory.is_dir() or not role.is_chief
        if locked and role.is_chief:
            held.enter_context(RunDirLock(directory))

        def create() -> None:
            prepare_run_dir(directory)
            if not locked:  # the directory was new: lock it now
                held.enter_context(RunDirLock(directory))

        yield create


def begin_run(
    loaded: LoadedConfig,
    directory: Path,
    console: Console,
    prepared: PreparedRun,
    create_run_dir: Callable[[], None],
    allow_config_change: bool = False,
) -> StatusRecord | None:
    """Create the run directory and write the run's own files; show the TensorFlow build and the notes.

    Written only now that everything is checked: a failed validation leaves nothing behind.

    Args:
        loaded: the config.
        directory: the run directory (absolute).
        console: where the build line and the notes are printed.
        prepared: the prepared run; its role's notes are added to its notes, ``notes_shown`` set.
        create_run_dir: from :func:`held_run_dir`.
        allow_config_change: resume even when the graph or data shape changed.

    Returns:
        The ``summary.json`` record saying ``running`` (the chief's), or None on another task.

    Raises:
        SetupError: a planted event-file symlink; a resumed run whose graph or data shape changed (with the
            diff) without ``allow_config_change``; an unwritable run directory (exit 2).
    """
    role = prepared.role
    prepared.notes.extend(role.notes)
    create_run_dir()
    # TensorFlow's event writers follow symlinks and name their files predictably: refuse planted ones
    check_event_dirs(directory, [
        ("the run", "."),  # the hparams; a model_fn's or custom hook's summaries, as TensorFlow's model_dir
        ("the run's training events", TRAIN_EVENT_DIR),  # checkpoint_saver's graph, whatever the hooks
        *((f"hooks[{index}] ({hook.display_name()})", event_dir)
          for index, hook in enumerate(loaded.config.hooks) if (event_dir := hook.event_dir()) is not None),
    ])
    config_text = self_contained_yaml(loaded)  # paths absolute or relative to the run directory
    saved_config = directory / "config.yaml"
    record = None
    if role.is_chief:  # holding the lock: nothing else writes here now
        clean_temporary_files(directory)  # left by a run killed mid-write
        write_checkpoint_state(directory, prepared.resume)
        if prepared.initial_step > 0 and saved_config.exists():
            change = compare_configs(read_saved_config(saved_config), config_text)
            if change.shape_diff and not allow_config_change:
                raise SetupError(
                    f"{saved_config}: this config changes the graph or data shape of a run at step "
                    f"{prepared.initial_step}; use a new --run-dir, or --allow-config-change to resume anyway:\n"
                    + change.shape_diff
                )
            if change.shape_diff:
                prepared.notes.append("resumed despite a graph/data-shape change (--allow-config-change)")
            if change.other_keys:
                prepared.notes.append("resumed with changed " + ", ".join(change.other_keys))
        # on a cluster the other workers leave the run's own files to the chief
        atomic_write_text(saved_config, config_text)
        if prepared.data.preprocessor is not None:  # (none with data.input_fn)
            prepared.data.preprocessor.save(directory / PREPROCESSING_FILE)
        # summary.json says `running` (with the start time and --set) until the end rewrites it
        record = begin_record(directory, loaded.overrides, resumed=prepared.initial_step > 0)
    # which TensorFlow build (CUDA or CPU-only, CUDA and cuDNN versions) and which devices it found
    console.print(describe_tensorflow(prepared.tf), highlight=False, soft_wrap=True, markup=False)
    for note in prepared.notes:  # before training, not under its table: the device it runs on, the resume
        console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    prepared.notes_shown = len(prepared.notes)
    return record
