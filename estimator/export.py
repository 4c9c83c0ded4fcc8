"""``hookrun.estimator.export``: mirrors ``tf.estimator.export`` (TF 1.15, ``estimator/export/export.py``).

The serving receivers and export outputs are hookrun's own, from :mod:`hookrun.runner.trained.serving`
(the runner's serving concern); this module only gives them ``tf.estimator.export``'s names. Importing it
does not import TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Name -> the runner's serving module that defines it.
_SERVING = "hookrun.runner.trained.serving"
_NAMES = (
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
    "ExportOutput",
    "PredictOutput",
    "ClassificationOutput",
    "RegressionOutput",
)


class NotInHookrunError(AttributeError):
    """A ``tf.estimator`` name hookrun does not provide; the message names it and the nearest hookrun way."""


def __getattr__(name: str) -> Any:
    """``tf.estimator.export.<name>`` from hookrun's serving module (PEP 562).

    Raises:
        NotInHookrunError: a name hookrun does not provide (the message names it and what to use).
    """
    if name in _NAMES:
        try:
            module = importlib.import_module(_SERVING)
        except ModuleNotFoundError as err:
            if err.name != _SERVING:
                raise
            raise NotInHookrunError(
                f"hookrun.estimator.export.{name} (tf.estimator.export.{name}) needs hookrun.runner.trained.serving, "
                "which this hookrun does not have yet; export with `hookrun export RUN_DIR --output DIR`"
            ) from None
        return getattr(module, name)
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotInHookrunError(
        f"tf.estimator.export.{name} is not provided by hookrun.estimator.export; it has {', '.join(_NAMES)} "
        "(docs/estimator-api.md)"
    )


def __dir__() -> list[str]:
    return sorted([*_NAMES, "NotInHookrunError"])


__all__ = list(_NAMES)
