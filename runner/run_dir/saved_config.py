"""The run directory's ``config.yaml``: the resolved config, made loadable from the run directory itself."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from hookrun.config_schemas.loader import LoadedConfig, resolved_yaml
from hookrun.runner.data.sources import absolute_spec

#: ``session.run_dir`` in a run directory's ``config.yaml``: the directory of that file, i.e. the run directory.
SELF = "."


def self_contained_yaml(loaded: LoadedConfig) -> str:
    """The resolved config as written to ``<run_dir>/config.yaml``: loadable from there, naming that run.

    As :func:`hookrun.config_schemas.loader.resolved_yaml` (defaults filled in, ``--set`` applied),
    with every path made independent of where the original config file was:

    - ``data.train`` and ``data.validation``: absolute (``<config dir>/<entry>``; globs stay globs);
    - ``graph.warm_start.from``: absolute;
    - ``${config_dir}`` in ``graph.params``: the original config's directory (absolute), so a vocabulary
      path there resolves alike in ``hookrun evaluate``, ``predict`` and ``export`` (which load the saved
      file); ``${run_dir}`` and ``${steps_per_run}`` stay placeholders;
    - ``session.run_dir``: ``.``, i.e. relative to the saved file: the run directory itself, so
      ``hookrun train runs/x/config.yaml`` resumes ``runs/x`` even after the directory was moved.

    Custom builders and hooks (``module:attr``) are still imported from ``sys.path`` and the
    directory of the config being loaded; a module that sat beside the original config must be
    importable (``PYTHONPATH``) to load the saved one.

    Args:
        loaded: the config of the run.

    Returns:
        YAML text; loading it gives the same config but for those paths.
    """
    config = loaded.config
    data_update: dict[str, object] = {}
    if config.data.train is not None:  # (an input_fn's module is found beside the original config)
        data_update["train"] = absolute_spec(config.data.train, loaded.base_dir)
    if config.data.validation is not None:
        data_update["validation"] = absolute_spec(config.data.validation, loaded.base_dir)
    graph = config.graph
    if graph.params:  # ${config_dir} is the original config's directory, wherever the saved config is loaded from
        graph = graph.model_copy(update={"params": _pin_config_dir(graph.params, str(loaded.base_dir))})
    if graph.warm_start is not None:
        from hookrun.runner.graph.warm_start import source_path

        absolute = str(source_path(graph.warm_start.from_, loaded.base_dir))
        graph = graph.model_copy(update={"warm_start": graph.warm_start.model_copy(update={"from_": absolute})})
    portable = config.model_copy(
        update={
            "graph": graph,
            "data": config.data.model_copy(update=data_update),
            "session": config.session.model_copy(update={"run_dir": SELF}),
        }
    )
    return resolved_yaml(dataclasses.replace(loaded, config=portable))


#: ``$$`` (kept as it is) or ``${config_dir}`` (replaced) in a string of ``graph.params``.
_CONFIG_DIR = re.compile(r"\$\$|\$\{config_dir\}")


def _pin_config_dir(value: Any, directory: str) -> Any:
    """``value`` (params at any depth) with ``${config_dir}`` written as ``directory`` (its ``$`` doubled)."""
    if isinstance(value, str):
        return _CONFIG_DIR.sub(lambda m: m.group(0) if m.group(0) == "$$" else directory.replace("$", "$$"), value)
    if isinstance(value, dict):
        return {key: _pin_config_dir(item, directory) for key, item in value.items()}
    if isinstance(value, list):
        return [_pin_config_dir(item, directory) for item in value]
    return value


def saved_config_path(run_dir: Path) -> Path:
    """``<run_dir>/config.yaml``."""
    return run_dir / "config.yaml"
