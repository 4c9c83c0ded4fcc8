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

#: ``$$`` (an escaped ``$``, kept) or the ``${config_dir}`` placeholder (replaced), in a string of params or args.
_CONFIG_DIR = re.compile(r"\$\$|\$\{config_dir\}")


def _fixed_config_dir(value: Any, base_dir: Path) -> Any:
    """``value`` with every ``${config_dir}`` replaced by ``base_dir`` (its ``$`` escaped as ``$$``), at any depth.

    The other placeholders (``${run_dir}``, ``${steps_per_run}``) and ``$$`` stay, for the run that loads the
    saved file to replace as its own; only ``${config_dir}`` would name the wrong directory there (the run
    directory, where the saved file is).
    """
    if isinstance(value, str):
        text = str(base_dir).replace("$", "$$")
        return _CONFIG_DIR.sub(lambda m: m.group(0) if m.group(0) == "$$" else text, value)
    if isinstance(value, dict):
        return {key: _fixed_config_dir(item, base_dir) for key, item in value.items()}
    if isinstance(value, list):
        return [_fixed_config_dir(item, base_dir) for item in value]
    return value


def self_contained_yaml(loaded: LoadedConfig) -> str:
    """The resolved config as written to ``<run_dir>/config.yaml``: loadable from there, naming that run.

    As :func:`hookrun.config_schemas.loader.resolved_yaml` (defaults filled in, ``--set`` applied),
    with every path made independent of where the original config file was:

    - ``data.train`` and ``data.validation``: absolute (``<config dir>/<entry>``; globs stay globs);
    - ``graph.warm_start.from``: absolute;
    - ``${config_dir}`` in ``graph.params`` and in custom hooks' ``args``: the original config's directory
      (absolute), so a vocabulary file beside that config is still found by ``hookrun evaluate``,
      ``predict``, ``export`` and a resume from the saved file;
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
    if graph.warm_start is not None:
        from hookrun.runner.graph.warm_start import source_path

        absolute = str(source_path(graph.warm_start.from_, loaded.base_dir))
        graph = graph.model_copy(update={"warm_start": graph.warm_start.model_copy(update={"from_": absolute})})
    graph = graph.model_copy(update={"params": _fixed_config_dir(dict(graph.params), loaded.base_dir)})
    hooks = [
        hook.model_copy(update={"args": _fixed_config_dir(dict(hook.args), loaded.base_dir)})
        if isinstance(getattr(hook, "args", None), dict)
        else hook
        for hook in config.hooks
    ]
    portable = config.model_copy(
        update={
            "graph": graph,
            "hooks": hooks,
            "data": config.data.model_copy(update=data_update),
            "session": config.session.model_copy(update={"run_dir": SELF}),
        }
    )
    return resolved_yaml(dataclasses.replace(loaded, config=portable))



def saved_config_path(run_dir: Path) -> Path:
    """``<run_dir>/config.yaml``."""
    return run_dir / "config.yaml"
