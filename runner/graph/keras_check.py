"""Refuse Keras 3 layers in a builder: their weights do not behave as the v1 variables hookrun saves and shares.

hookrun runs ``tf.keras`` as tf-keras (Keras 2, ``TF_USE_LEGACY_KERAS=1``, :mod:`hookrun.runner.tf_env`), whose
layers name their weights per graph; ``tf.compat.v1.layers`` (on tf-keras) also follow the ``variable_scope``, so
the in-graph evaluation's ``reuse=True`` call shares them. A Keras 3 layer (``import keras``; or ``tf.keras`` when
the user set ``TF_USE_LEGACY_KERAS=0``) does make variables in a graph, and the v1 ``Saver`` writes them, but their
names come from a counter kept for the whole Python process (``dense``, then ``dense_1`` in the next graph) and
ignore the ``variable_scope``: a graph built again in one process (a resumed run, the evaluation, ``predict`` after
``train``) names them differently from the checkpoint, and the evaluation's ``reuse=True`` call makes new, untrained
weights. So they are refused when created, with the layer's name, rather than failing later with a checkpoint key
missing.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

#: Module prefix of Keras 3's code (tf-keras is ``tf_keras.``).
_KERAS3 = "keras."


class Keras3LayerError(ValueError):
    """A builder created a variable through a Keras 3 layer; the message names the layer and the fix."""


def _keras3_layer(frame: Any) -> tuple[bool, Any]:
    """Walk the Python stack from ``frame``: (a Keras 3 frame is on it, the outermost Keras 3 layer object or None)."""
    in_keras3 = False
    layer = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(_KERAS3):
            in_keras3 = True
            owner = frame.f_locals.get("self")
            if owner is not None and type(owner).__module__.startswith(_KERAS3) and hasattr(owner, "name"):
                layer = owner  # keep going: the outermost is the user's layer (Dense, not its sublayer helpers)
        frame = frame.f_back
    return in_keras3, layer


@contextlib.contextmanager
def refuse_keras3_layers(tf: Any, builder: str, mode: str) -> Iterator[None]:
    """Within the block, creating a variable from Keras 3's code raises :class:`Keras3LayerError`.

    A ``tf.compat.v1.variable_creator_scope`` sees every variable made in the graph (``get_variable``,
    ``tf.Variable``, tf-keras and Keras 3 layers); only those whose creation runs through a module of the
    ``keras`` package (Keras 3) are refused. tf-keras (``tf_keras``), ``tf.compat.v1.layers`` and plain
    variables pass untouched.

    Args:
        tf: the ``tensorflow`` module.
        builder: ``graph.builder``, for the message.
        mode: the mode the builder is called in, for the message.

    Raises:
        Keras3LayerError: from the variable's creation inside the block.
    """

    def creator(next_creator: Any, **kwargs: Any) -> Any:
        in_keras3, layer = _keras3_layer(sys._getframe(1))
        if in_keras3:
            variable = kwargs.get("name") or "a variable"
            what = (
                f"the Keras 3 layer {layer.name!r} ({type(layer).__name__})" if layer is not None else "Keras 3 code"
            )
            legacy = os.environ.get("TF_USE_LEGACY_KERAS", "")
            hint = (
                f"; TF_USE_LEGACY_KERAS is {legacy!r} in the environment: unset it (hookrun sets 1) so tf.keras "
                "is tf-keras"
                if legacy.lower() not in ("1", "true")
                else ""
            )
            raise Keras3LayerError(
                f"{builder} ({mode} mode): {what} creates the variable {variable!r}; Keras 3 names its weights per "
                "process, outside the variable_scope, so checkpoints and the evaluation would not find them. Use "
                "tf.keras.layers (tf-keras, Keras 2) or tf.compat.v1.layers instead of `import keras`" + hint
            )
        return next_creator(**kwargs)

    with tf.compat.v1.variable_creator_scope(creator):
        yield
