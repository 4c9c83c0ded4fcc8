"""``hookrun.estimator``: the ``tf.estimator`` API (TF 1.15) on hookrun's runner; ``import ... as tf_estimator``.

A TF 1.x Estimator program runs by changing its import::

    from hookrun import estimator as tf_estimator   # was: from tensorflow.compat.v1 import estimator as tf_estimator

``Estimator.train`` runs :func:`hookrun.runner.train` (every run directory is an ordinary hookrun run);
``evaluate``, ``predict`` and ``export_saved_model`` build the model_fn's graph on the latest checkpoint.
The names and what each mirrors: ``docs/estimator-api.md``. Dependencies: estimator -> runner -> hooks ->
config_schemas; importing this package does not import TensorFlow (names load on first use).
Imported before TensorFlow, it sets ``TF_USE_LEGACY_KERAS=1`` unless set (``tf.compat.v1.layers`` need tf-keras).
A ``tf.estimator`` name hookrun does not provide raises :class:`NotInHookrunError` (an ``AttributeError``)
naming it and the nearest hookrun way.
"""

from __future__ import annotations

# One import name per module: `import estimator` from the repository root would load a second copy.
if __name__ != "hookrun.estimator":
    raise ImportError(f"import hookrun.estimator, not {__name__}: the folder estimator/ installs as hookrun.estimator")

import importlib
import os
import sys
from typing import Any

from hookrun.estimator.export import NotInHookrunError

# tf.compat.v1.layers need tf-keras as tf.keras, chosen when TensorFlow is first imported: a program that imports
# hookrun.estimator before TensorFlow gets it (as `hookrun train` does; the user's own setting wins).
if "tensorflow" not in sys.modules:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

#: Public name -> ``module:attribute`` (module only: a submodule), loaded on first access.
_LAZY: dict[str, str] = {
    "Estimator": "hookrun.estimator.estimator:Estimator",
    "RunConfig": "hookrun.estimator.run_config:RunConfig",
    "EstimatorSpec": "hookrun.runner.graph.model_fn:EstimatorSpec",
    "ModeKeys": "hookrun.runner.graph.model_fn:ModeKeys",
    "TrainSpec": "hookrun.estimator.training:TrainSpec",
    "EvalSpec": "hookrun.estimator.training:EvalSpec",
    "train_and_evaluate": "hookrun.estimator.training:train_and_evaluate",
    "Exporter": "hookrun.estimator.exporter:Exporter",
    "FinalExporter": "hookrun.estimator.exporter:FinalExporter",
    "LatestExporter": "hookrun.estimator.exporter:LatestExporter",
    "BestExporter": "hookrun.estimator.exporter:BestExporter",
    "WarmStartSettings": "hookrun.estimator.warm_starting:WarmStartSettings",
    "export": "hookrun.estimator.export",
    "inputs": "hookrun.estimator.inputs",
    # the premade estimators (issue 27): TF 1.15's canned models
    "DNNClassifier": "hookrun.estimator.canned:DNNClassifier",
    "DNNRegressor": "hookrun.estimator.canned:DNNRegressor",
    "LinearClassifier": "hookrun.estimator.canned:LinearClassifier",
    "LinearRegressor": "hookrun.estimator.canned:LinearRegressor",
    "DNNLinearCombinedClassifier": "hookrun.estimator.canned:DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor": "hookrun.estimator.canned:DNNLinearCombinedRegressor",
}

#: ``tf.estimator`` names that were TensorFlow's own training classes: given from ``tf.compat.v1.train``.
_FROM_TF_TRAIN = ("CheckpointSaverListener", "SessionRunHook", "SessionRunArgs", "SessionRunContext",
                  "SessionRunValues")

#: Premade estimators hookrun does not provide (the six DNN/linear ones are in hookrun.estimator.canned).
_PREMADE = ("BaselineClassifier", "BaselineRegressor", "BoostedTreesClassifier", "BoostedTreesRegressor")


def __getattr__(name: str) -> Any:
    """Load a public name on first access (PEP 562); explain a ``tf.estimator`` name hookrun lacks.

    Raises:
        NotInHookrunError: ``name`` is not provided (the message names it and the nearest hookrun way).
    """
    target = _LAZY.get(name)
    if target is not None:
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        value = getattr(module, attr) if attr else module
        globals()[name] = value
        return value
    if name in _FROM_TF_TRAIN:
        from hookrun.runner.tf_env import import_tensorflow

        return getattr(import_tensorflow(False).compat.v1.train, name)
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _PREMADE:
        raise NotInHookrunError(
            f"tf.estimator.{name} (a premade estimator) is not in hookrun.estimator yet; use your own model_fn "
            "with hookrun.estimator.Estimator, or a premade one it has (DNNClassifier, LinearRegressor, ...) "
            "(docs/estimator-api.md)"
        )
    raise NotInHookrunError(
        f"tf.estimator.{name} is not provided by hookrun.estimator; the names it has are in docs/estimator-api.md "
        "(write the model as a model_fn for hookrun.estimator.Estimator, or as a hookrun YAML config)"
    )


def __dir__() -> list[str]:
    return sorted([*_LAZY, *_FROM_TF_TRAIN, "NotInHookrunError"])


__all__ = sorted([*_LAZY, *_FROM_TF_TRAIN, "NotInHookrunError"])
