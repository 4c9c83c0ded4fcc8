"""The runner: graph builders, data, device, session and lifecycle.

Importing this package does not import TensorFlow; :func:`train` does, when called.
"""

from __future__ import annotations

# One import name per module: `import runner` from the repository root would load a second copy.
if __name__ != "hookrun.runner":
    raise ImportError(f"import hookrun.runner, not {__name__}: the folder runner/ installs as hookrun.runner")

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookrun.runner.graph import layers
from hookrun.runner.graph.model_fn import EstimatorSpec, ModeKeys

if TYPE_CHECKING:
    from hookrun.config_schemas.loader import LoadedConfig
    from hookrun.runner.trained.evaluate import EvalResult
    from hookrun.runner.trained.export import ExportResult
    from hookrun.runner.trained.results import PredictResult
    from hookrun.runner.trained.runs import RunsTable
    from hookrun.runner.trained.sweep import SweepResult
    from hookrun.runner.training.result import TrainResult


def train(
    config: LoadedConfig | str | Path | Mapping[str, Any], overrides: Sequence[str] = (), **kwargs: Any
) -> TrainResult:
    """Train from a config file path, a config dict or a loaded config; see :func:`hookrun.runner.trainer.train`.

    Args:
        config: a YAML path; a dict as the YAML would read (its relative paths relative to the current
            directory); or a ``LoadedConfig`` from ``hookrun.runner.config.load_config``.
        overrides: ``PATH=VALUE`` texts, as ``hookrun train --set`` (``["data.epochs=5"]``), for a path or a
            dict; a ``LoadedConfig`` has its overrides already (``load_config(path, overrides)``).
        **kwargs: ``run_dir`` (str or Path), ``console``, ``verbose``, ``allow_config_change``, ``trace``.

    Returns:
        The ``TrainResult`` (``history``, ``final_global_step``, ``checkpoint_path``, ``run_dir``, ...).

    Raises:
        ConfigError, SetupError: invalid config or data (exit code 2).
        TrainingError: training failed (exit code 1).
        TypeError: ``config`` is none of those, or overrides come with a ``LoadedConfig``.
    """
    from hookrun.runner.trainer import train as _train

    if isinstance(overrides, str):  # one override, not its characters
        overrides = [overrides]
    if kwargs.get("run_dir") is not None:
        kwargs["run_dir"] = Path(kwargs["run_dir"])  # "runs/x" as well as Path("runs/x")
    if isinstance(config, (str, Path, Mapping)):
        from hookrun.runner.config import load_checked

        config, _warnings = load_checked(config, list(overrides), kwargs.get("run_dir"))
    elif overrides:
        raise TypeError("overrides apply to a config path or dict; a LoadedConfig has its own "
                        "(load_config(path, overrides))")
    elif not hasattr(config, "config") or not hasattr(config, "base_dir"):
        raise TypeError(f"a config is a YAML file's path, a dict or a LoadedConfig, not {type(config).__name__}")
    return _train(config, **kwargs)


def evaluate(
    run_dir: str | Path,
    data: list[str] | None = None,
    checkpoint: str = "latest",
    verbose: bool = False,
    input_fn: str | None = None,
) -> EvalResult:
    """Evaluate a run's checkpoint on its validation rows or on ``data``.

    See :func:`hookrun.runner.trained.evaluate.evaluate`.

    Args:
        run_dir: the run directory ``train`` wrote.
        data: data files (relative to the current directory), or None for the run's validation rows.
        checkpoint: ``latest``, ``best`` or a checkpoint prefix.
        verbose: show TensorFlow's INFO logs.
        input_fn: an Estimator ``input_fn`` (``module:function``) to evaluate on instead; a run trained from
            ``data.input_fn`` defaults to its ``data.eval_input_fn``.

    Returns:
        The ``EvalResult`` (``metrics``: ``val_loss``, ``val_<metric>``; ``global_step``; ``output``, the
        ``eval-<step>.json`` written).

    Raises:
        ConfigError, SetupError: no such run or checkpoint, bad data (exit code 2); nothing is written.
    """
    from hookrun.runner.trained.evaluate import evaluate as _evaluate

    return _evaluate(run_dir, data=data, checkpoint=checkpoint, verbose=verbose, input_fn=input_fn)


def runs(root: str | Path = "runs", sort: str | None = None) -> RunsTable:
    """The runs under ``root``, one row each; see :func:`hookrun.runner.trained.runs.list_runs` (no TensorFlow).

    Args:
        root: a directory of run directories, a sweep's directory, or one run directory.
        sort: a ``val_*`` metric (best first), or ``name``, ``started``, ``steps``, ``wall_seconds``, ``status``.

    Returns:
        The ``RunsTable`` (``runs``: rows with ``status``, ``steps``, ``wall_seconds``, ``metrics`` (final and
        best of each ``val_*``), ``distinguishing`` overrides; ``to_json()``).

    Raises:
        SetupError: ``root`` is no directory, or ``sort`` names no metric of these runs (exit code 2).
    """
    from hookrun.runner.trained.runs import list_runs

    return list_runs(root, sort=sort)


def sweep(config: str | Path, sweeps: list[str], **kwargs: Any) -> SweepResult:
    """One run per combination of ``sweeps`` values; see :func:`hookrun.runner.trained.sweep.sweep`.

    Args:
        config: the YAML config path.
        sweeps: ``PATH=V1,V2,...`` texts (several: their cartesian product).
        **kwargs: ``overrides`` (``--set`` texts), ``run_dir`` (the base), ``console``, ``verbose``.

    Returns:
        The ``SweepResult`` (``base_dir``; ``runs``, each with ``name``, ``run_dir``, ``status``; ``failed``).

    Raises:
        ConfigError, SetupError: a malformed sweep or a combination that does not check (exit code 2),
            before any training.
    """
    from hookrun.runner.trained.sweep import sweep as _sweep

    return _sweep(config, sweeps, **kwargs)


def predict(
    run_dir: str | Path,
    data: list[str] | None,
    output: str | Path,
    checkpoint: str = "latest",
    overwrite: bool = False,
    verbose: bool = False,
    input_fn: str | None = None,
) -> PredictResult:
    """Predict every row of ``data`` with a run's checkpoint; write one CSV row per input row to ``output``.

    See :func:`hookrun.runner.trained.predict.predict`.

    Args:
        run_dir: the run directory ``train`` wrote.
        data: data files (relative to the current directory) with the model's feature columns.
        output: the CSV to write.
        checkpoint: ``latest``, ``best`` or a checkpoint prefix.
        overwrite: replace ``output`` if it exists.
        verbose: show TensorFlow's INFO logs.
        input_fn: instead of ``data`` (None), an Estimator ``input_fn`` (``module:function``); every key of the
            predictions dict is written per example to ``output`` (``.jsonl`` or ``.csv``).

    Returns:
        The ``PredictResult`` (``rows``, ``columns``, ``output``, ``global_step``).

    Raises:
        ConfigError, SetupError: no such run or checkpoint, bad data, ``output`` exists (exit code 2); nothing
            is written.
    """
    from hookrun.runner.trained.predict import predict as _predict

    return _predict(
        run_dir, data, output, checkpoint=checkpoint, overwrite=overwrite, verbose=verbose, input_fn=input_fn
    )


def export(
    run_dir: str | Path,
    output: str | Path,
    checkpoint: str = "latest",
    overwrite: bool = False,
    verbose: bool = False,
    serving_input_fn: str | None = None,
) -> ExportResult:
    """Export a run's checkpoint as a SavedModel taking raw columns; see :func:`hookrun.runner.trained.export.export`.

    Args:
        run_dir: the run directory ``train`` wrote.
        output: the SavedModel directory to write.
        checkpoint: ``latest``, ``best`` or a checkpoint prefix.
        overwrite: replace ``output`` if it exists.
        verbose: show TensorFlow's INFO logs.
        serving_input_fn: an Estimator ``serving_input_receiver_fn`` (``module:function``), else the run's
            ``graph.serving_input_fn``: the signatures are Estimator's on its receiver.

    Returns:
        The ``ExportResult`` (``output``, ``signatures``, ``global_step``).

    Raises:
        ConfigError, SetupError: no such run or checkpoint, ``output`` exists (exit code 2); nothing is written.
    """
    from hookrun.runner.trained.export import export as _export

    return _export(
        run_dir, output, checkpoint=checkpoint, overwrite=overwrite, verbose=verbose, serving_input_fn=serving_input_fn
    )


__all__ = ["EstimatorSpec", "ModeKeys", "evaluate", "export", "layers", "predict", "runs", "sweep", "train"]
