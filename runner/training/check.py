"""The prepare phase alone: ``hookrun validate --build`` and ``hookrun inspect`` build what ``train`` would.

No session is created and nothing is written; the run directory is only read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from hookrun.config_schemas.loader import LoadedConfig
from hookrun.runner.run_dir.directory import resolve_run_dir
from hookrun.runner.training.lifecycle import run_dir_for
from hookrun.runner.training.prepare import prepare


def check_graph(loaded: LoadedConfig, run_dir: Path | None = None, verbose: bool = False) -> dict[str, Any]:
    """Build the graph and every hook, resolving every tensor name; no session, nothing written.

    Behind ``hookrun validate CONFIG --build``.

    Returns:
        ``{"named": [...], "trainable_variables": [(name, shape), ...], "device": str, "hooks": int,
        "training_hooks": [name, ...], "training_chief_hooks": [...], "evaluation_hooks": [...]}`` (a
        model_fn's hooks: ``training_hooks`` then ``training_chief_hooks`` run after the config's hooks;
        ``evaluation_hooks`` around each evaluation, listed when the run evaluates).

    Raises:
        ConfigError, SetupError: as :func:`hookrun.runner.training.prepare.prepare`.
    """
    directory = resolve_run_dir(run_dir_for(loaded, run_dir))
    prepared = prepare(loaded, directory, Console(quiet=True), verbose)
    prepared.close()
    with prepared.built.graph.as_default():
        variables = [(v.op.name, v.shape.as_list()) for v in prepared.tf.compat.v1.trainable_variables()]
    evaluation = prepared.built.evaluation
    spec_names = prepared.hooks.spec_names
    return {
        "named": sorted(prepared.built.named),
        "trainable_variables": variables,
        "device": prepared.placement.device,
        "hooks": len(prepared.hooks.instances),
        "training_hooks": [n for n in spec_names if n.startswith("training_hooks[")],
        "training_chief_hooks": [n for n in spec_names if n.startswith("training_chief_hooks[")],
        "evaluation_hooks": [
            f"evaluation_hooks[{i}] {type(h).__name__}"
            for i, h in enumerate(evaluation.evaluation_hooks if evaluation is not None else [])
        ],
    }


def inspect_graph(loaded: LoadedConfig, run_dir: Path | None = None, verbose: bool = False) -> Any:
    """Build the graph and every hook as ``train`` would and list what hooks may name; nothing written.

    Behind ``hookrun inspect CONFIG``. The run directory is only read (the latest checkpoint's step,
    the saved preprocessing), never created.

    Args:
        loaded: the config.
        run_dir: overrides the config's run directory (as ``train``'s ``run_dir``).
        verbose: show TensorFlow's INFO logs.

    Returns:
        A :class:`hookrun.runner.graph.tensor_names.GraphInventory`: every nameable tensor (name, dtype,
        shape, op type), the aliases and what each resolves to, the variables.

    Raises:
        ConfigError, SetupError: as :func:`hookrun.runner.training.prepare.prepare`.
    """
    from hookrun.runner.graph.tensor_names import graph_inventory

    directory = run_dir_for(loaded, run_dir).resolve()
    prepared = prepare(loaded, directory, Console(quiet=True), verbose)
    prepared.close()
    return graph_inventory(prepared.tf, prepared.built.graph, prepared.built.named, prepared.placement.device)
