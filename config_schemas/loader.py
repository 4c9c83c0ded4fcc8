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

from collections.abc import Sequence
from pathlib import Path

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
    "resolved_yaml",
]


def load_config(path: str | Path, overrides: Sequence[str] = (), *, model: type[RunConfigBase]) -> LoadedConfig:
    """Read, override and validate a hookrun config file.

    Args:
        path: the YAML config file.
        overrides: ``PATH=VALUE`` strings (from ``--set``), applied in order
            before validation; VALUE is read as a YAML scalar or flow value.
        model: the config model, with its hook union
            (``hookrun.hooks.registry.run_config_model_with_hooks()``; ``hookrun.runner.config.load_config``
            passes it).

    Returns:
        LoadedConfig: the validated config, its absolute path and base
        directory, and the YAML positions of its values.

    Raises:
        ConfigError: with every issue found (file, YAML, override or
            validation problems); its ``exit_code`` is 2.
    """
    source = str(path)
    file = Path(path)
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
    data = to_data(root, source, index)
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
    absolute = file.resolve()
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
