"""Load a hookrun YAML config into a validated ``RunConfig``, with file:line:column errors.

The steps: :mod:`.yaml_source` reads the file and converts it to data that
remembers its positions; ``--set PATH=VALUE`` overrides are applied
(:mod:`.model_paths`, imported only when there are any); the data is validated
with the given model; a validation error is turned into located issues
(:mod:`.model_paths` again, only then). Every problem becomes a
:class:`ConfigIssue` pointing at the file, line and column of the offending
YAML node.

This module never imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from hookrun.config_schemas.run_config import RunConfigBase
from hookrun.config_schemas.yaml_source import (
    MAX_FILE_BYTES,
    NULL_TAG,
    OVERRIDE_FILE,
    ConfigError,
    ConfigIssue,
    LoadedConfig,
    LocationIndex,
    Override,
    QuotingDumper,
    Where,
    compose_yaml,
    format_yaml_path,
    node_mark,
    read_text,
    to_data,
)

__all__ = [
    "MAX_FILE_BYTES",
    "OVERRIDE_FILE",
    "ConfigError",
    "ConfigIssue",
    "LoadedConfig",
    "format_yaml_path",
    "load_config",
    "load_config_data",
    "resolved_yaml",
]


def load_config(
    path: str | Path,
    overrides: Sequence[str] = (),
    *,
    model: type[RunConfigBase],
    configs: Sequence[str | Path] = (),
) -> LoadedConfig:
    """Read, compose, override and validate a hookrun config file.

    Args:
        path: the YAML config file (the base: relative paths in the composed config are relative to its
            directory).
        overrides: ``PATH=VALUE`` strings (from ``--set``), applied in order
            before validation; VALUE is read as a YAML scalar or flow value.
        model: the config model, with its hook union
            (``hookrun.hooks.registry.run_config_model_with_hooks()``; ``hookrun.runner.config.load_config``
            passes it).
        configs: more YAML files (``--config``), merged over ``path`` in order before the overrides:
            mappings key by key, any other value (a list such as ``hooks``, a scalar, null) replaced whole,
            as OmegaConf merges Hydra's config groups and LightningCLI its ``--config`` files. A problem with
            a value names the file and line that set it last.

    Returns:
        LoadedConfig: the validated config, its absolute path and base
        directory, and the YAML positions of its values.

    Raises:
        ConfigError: with every issue found (file, YAML, override or
            validation problems); its ``exit_code`` is 2.
    """
    source = str(path)
    data, index = _read_mapping(Path(path), source)
    for extra in configs:
        extra_source = str(extra)
        extra_data, extra_index = _read_mapping(Path(extra), extra_source)
        for loc, where in extra_index.entries.items():
            extra_index.entries[loc] = dataclasses.replace(where, source=extra_source)
        _merge(data, index, extra_data, extra_index, ())
    return _validated(data, index, source, Path(path).resolve(), overrides, model)


def _read_mapping(file: Path, source: str) -> tuple[dict[str, Any], LocationIndex]:
    """Read one config file: its data (a mapping) and the positions of its values.

    Raises:
        ConfigError: unreadable, not YAML, empty, or not a mapping at the top (named at ``source``).
    """
    text = read_text(file, source)
    root = compose_yaml(text, source)
    if root is None or (isinstance(root, ScalarNode) and root.tag == NULL_TAG):
        raise ConfigError(
            [ConfigIssue(source, 1, None, "", "the config is empty; it needs at least name, graph and data")]
        )
    if not isinstance(root, MappingNode):
        kind = "a list" if isinstance(root, SequenceNode) else "a single value"
        line, column = node_mark(root)
        raise ConfigError(
            [
                ConfigIssue(
                    source,
                    line,
                    column,
                    "",
                    f"the top level of the config must be a mapping (name: ..., graph: ..., data: ...), not {kind}",
                )
            ]
        )
    index = LocationIndex()
    index.entries[()] = Where(None, node_mark(root), False)
    return to_data(root, source, index), index


def _merge(
    data: dict[str, Any], index: LocationIndex, extra: dict[str, Any], extra_index: LocationIndex, loc: tuple
) -> None:
    """Merge ``extra`` (a ``--config`` file's mapping at ``loc``) into ``data``, and its positions into ``index``.

    A key both hold as mappings is merged key by key (the base keeps its key's position); any other value
    replaces the base's whole, and the base's positions under it give way to ``extra``'s.
    """
    for key, value in extra.items():
        here = (*loc, key)
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            _merge(data[key], index, value, extra_index, here)
            continue
        data[key] = value
        index.prune_below(here)
        index.entries.pop(here, None)
        for entry, where in extra_index.entries.items():
            if entry[: len(here)] == here:
                index.entries[entry] = where


#: The ``source`` a config given as a dict is named by in messages.
DICT_SOURCE = "<dict config>"


def load_config_data(
    data: Mapping[str, Any],
    overrides: Sequence[str] = (),
    *,
    model: type[RunConfigBase],
    base_dir: str | Path | None = None,
) -> LoadedConfig:
    """Override and validate a config given as data (a dict as the YAML file would read), not as a file.

    Args:
        data: the config: ``{"name": ..., "graph": {...}, "data": {...}, "hooks": [...]}``; not modified.
            A ``Path`` value is taken as its string.
        overrides: ``PATH=VALUE`` strings, as for :func:`load_config`.
        model: the config model, as for :func:`load_config`.
        base_dir: what its relative paths (data files, modules, the run directory) are relative to;
            default the current directory.

    Returns:
        LoadedConfig: the validated config; its ``source`` is ``<dict config>`` and its issues carry no line
        numbers (there is no file).

    Raises:
        ConfigError: ``data`` is not a mapping of plain YAML values (str, numbers, bools, None, lists,
            dicts), or an override or the validation fails; exit code 2.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(
            [ConfigIssue(DICT_SOURCE, None, None, "", f"a config must be a dict (name: ..., graph: ..., data: ...), "
                         f"not {type(data).__name__}")]
        )
    try:  # a deep copy in plain YAML types: the caller's dict stays as it was, and it is what a file would hold
        plain = yaml.safe_load(yaml.safe_dump(_plain_paths(dict(data)), sort_keys=False))
    except yaml.YAMLError as exc:
        raise ConfigError(
            [ConfigIssue(DICT_SOURCE, None, None, "", f"the config holds a value YAML cannot represent: {exc}")]
        ) from None
    where = Path(base_dir) if base_dir is not None else Path.cwd()
    return _validated(plain, LocationIndex(), DICT_SOURCE, where.resolve() / DICT_SOURCE, overrides, model)


def _plain_paths(value: Any) -> Any:
    """``value`` with every ``os.PathLike`` (a ``Path`` for ``data.train``) as its string, at any depth."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {key: _plain_paths(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_paths(item) for item in value]
    return value


def _validated(
    data: dict[str, Any],
    index: LocationIndex,
    source: str,
    absolute: Path,
    overrides: Sequence[str],
    model: type[RunConfigBase],
) -> LoadedConfig:
    """Apply ``overrides`` to ``data`` and validate it with ``model`` (the steps after reading)."""
    applied: list[Override] = []
    override_issues: list[ConfigIssue] = []
    if overrides:
        from hookrun.config_schemas.model_paths import apply_override
    for text_override in overrides:
        try:
            set_path = apply_override(data, text_override, model)
        except ConfigError as exc:
            override_issues.extend(exc.issues)
            continue
        index.prune_below(set_path)
        applied.append(Override(set_path, text_override))
    if override_issues:
        raise ConfigError(override_issues)
    try:
        config = model.model_validate(data)
    except ValidationError as exc:
        from hookrun.config_schemas.model_paths import validation_issues

        raise ConfigError(validation_issues(exc, data, source, index, applied, model)) from None
    except RecursionError:
        raise ConfigError(
            [ConfigIssue(source, None, None, "", "the config is nested too deeply to validate")]
        ) from None
    return LoadedConfig(
        config=config,
        path=absolute,
        base_dir=absolute.parent,
        source=source,
        _index=index,
        _overrides=tuple(applied),
    )


def resolved_yaml(loaded: LoadedConfig) -> str:
    """Dump the resolved config: defaults filled in and overrides applied.

    Args:
        loaded: a config from :func:`load_config`.

    Returns:
        str: block-style YAML with keys in the order the models declare
        them (aliases such as ``class`` used); loading it again gives an
        equal ``RunConfig``.
    """
    data = loaded.config.model_dump(mode="json", by_alias=True)
    return yaml.dump(data, Dumper=QuotingDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)
