"""The runner: graph builders, data, device, session and lifecycle.

Importing this package does not import TensorFlow; :func:`train` does, when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookrun.runner.train import TrainResult


def train(*args: Any, **kwargs: Any) -> TrainResult:
    """Train from a loaded config; see :func:`hookrun.runner.train.train`."""
    from hookrun.runner.train import train as _train

    return _train(*args, **kwargs)


__all__ = ["train"]
