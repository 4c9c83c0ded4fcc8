"""Load a config with the registered hooks, and check it before TensorFlow loads. No TensorFlow.

The one place where ``load → preflight → ConfigError`` happens, for ``hookrun train``,
``validate``, ``inspect`` and :func:`hookrun.runner.train`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hookrun.config_schemas import loader
from hookrun.config_schemas.loader import ConfigError, ConfigIssue, LoadedConfig
from hookrun.hooks.registry import run_config_model_with_hooks

__all__ = ["ConfigError", "LoadedConfig", "load_checked", "load_config"]


def load_config(
    path: str | Path | Mapping[str, Any], overrides: Sequence[str] = (), configs: Sequence[str | Path] = ()
) -> LoadedConfig:
    """Read, compose, override and validate a config file against the ``RunConfig`` of the registered hooks.

    Args:
        path: the YAML config file, or the config as a dict (as the YAML would read; its relative paths are
            relative to the current directory; see :func:`hookrun.config_schemas.loader.load_config_data`).
        overrides: ``PATH=VALUE`` strings (``--set``), applied in order before validation.
        configs: more YAML files (``--config``) merged over ``path`` in order, before ``overrides``
            (:func:`hookrun.config_schemas.loader.load_config`); only with a file ``path``.

    Returns:
        The validated config with its positions.

    Raises:
        ConfigError: every issue found (file, YAML, override, validation); exit code 2.
    """
    if isinstance(path, Mapping):
        if configs:
            raise TypeError("configs (--config files) merge over a config file, not a dict config")
        return loader.load_config_data(path, overrides, model=run_config_model_with_hooks())
    if not isinstance(path, (str, Path)):
        raise TypeError(f"a config is a YAML file's path (str or Path) or a dict, not {type(path).__name__}")
    return loader.load_config(path, overrides, model=run_config_model_with_hooks(), configs=configs)


def load_checked(
    path: str | Path | Mapping[str, Any],
    overrides: Sequence[str] = (),
    run_dir: Path | None = None,
    configs: Sequence[str | Path] = (),
) -> tuple[LoadedConfig, list[ConfigIssue]]:
    """:func:`load_config`, then :func:`hookrun.runner.preflight.preflight`: the checks before TensorFlow.

    Args:
        path: the YAML config file, or the config as a dict (see :func:`load_config`).
        overrides: ``PATH=VALUE`` strings (``--set``).
        run_dir: ``--run-dir`` when given (a run that resumes there ignores ``graph.warm_start``).
        configs: ``--config`` files merged over ``path`` in order (see :func:`load_config`).

    Returns:
        The config and the preflight's warnings (to print; the run goes on).

    Raises:
        ConfigError: the config does not load, or preflight finds an error (with every issue,
            warnings included); exit code 2.
    """
    from hookrun.runner.preflight import preflight

    loaded = load_config(path, overrides, configs)
    issues = preflight(loaded, run_dir)
    if any(issue.severity == "error" for issue in issues):
        raise ConfigError(issues)
    return loaded, issues
