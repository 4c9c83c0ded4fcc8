"""The role of a run in one process: the chief of itself, on one device or on towers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.runner.graph.run_config import RunInfo, make_run_info
from hookrun.runner.roles.base import Role, SessionSetup
from hookrun.runner.roles.placement import Placement, device_placement
from hookrun.runner.run_dir.directory import clean_temporary_files


class LocalRole(Role):
    """One process trains alone: it is the chief, runs every hook and creates its session through ``session.engine``.

    Placement is ``device:`` alone (one device, or towers with a list; :mod:`hookrun.runner.graph.towers`).
    """

    def placement(self, tf: Any, config: RunConfigBase) -> Placement:
        """``device:`` resolved against the GPUs TensorFlow sees (:func:`.placement.device_placement`)."""
        return device_placement(tf, config)

    def run_info(self, config: RunConfigBase, directory: Path, tf: Any, placement: Placement) -> RunInfo:
        """Estimator's ``RunConfig`` of a one-process run (no cluster spec, the session's ``ConfigProto``)."""
        return make_run_info(config, directory, tf=tf, session_config=placement.session_config(tf, config))

    def session_setup(
        self,
        tf: Any,
        config: RunConfigBase,
        placement: Placement,
        *,
        hooks: list[Any],
        scaffold: Any,
        directory: Path,
        console: Console,
        graph: Any,
    ) -> SessionSetup:
        """The placement's ``ConfigProto``; no factory: ``session.engine`` creates the session."""
        return SessionSetup(placement.session_config(tf, config))

    def finish(self, completed: bool, directory: Path) -> list[str]:
        """After a failed session, remove the temporary files a failed write left (the last good checkpoint stays)."""
        if not completed:
            clean_temporary_files(directory)
        return []
