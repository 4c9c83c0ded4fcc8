"""The run directory's ``config.yaml``: the resolved config, made loadable from the run directory itself."""

from __future__ import annotations

import dataclasses
from pathlib import Path

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
    portable = config.model_copy(
        update={
            "graph": graph,
            "data": config.data.model_copy(update=data_update),
            "session": config.session.model_copy(update={"run_dir": SELF}),
        }
    )
    return resolved_yaml(dataclasses.replace(loaded, config=portable))


def saved_config_path(run_dir: Path) -> Path:
    """``<run_dir>/config.yaml``."""
    return run_dir / "config.yaml"
