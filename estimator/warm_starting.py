"""``WarmStartSettings``: mirrors ``tf.estimator.WarmStartSettings`` (TF 1.15), as hookrun's ``graph.warm_start``.

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple


class WarmStartSettings(NamedTuple):
    """Start training from another checkpoint's weights; mirrors ``tf.estimator.WarmStartSettings``.

    Becomes ``graph.warm_start`` (``docs/config.md``): applied only when ``model_dir`` holds no checkpoint.

    Attributes:
        ckpt_to_initialize_from: a checkpoint prefix or a directory of checkpoints (str).
        vars_to_warm_start: a regular expression over trainable variable names (str), or a list of names
            (joined as alternatives); default ``.*``. None (TF: nothing) is refused.
        var_name_to_vocab_info: must be None or empty (vocabulary remapping is not supported).
        var_name_to_prev_var_name: new variable name -> its name in the checkpoint.

    Raises:
        ValueError (from :meth:`to_config`): ``var_name_to_vocab_info`` given, or ``vars_to_warm_start`` None.
    """

    ckpt_to_initialize_from: str
    vars_to_warm_start: Any = ".*"
    var_name_to_vocab_info: Any = None
    var_name_to_prev_var_name: Any = None

    def to_config(self) -> dict[str, Any]:
        """The ``graph.warm_start`` mapping of these settings."""
        if self.var_name_to_vocab_info:
            raise ValueError("WarmStartSettings.var_name_to_vocab_info is not supported by hookrun (no vocabulary "
                             "remapping); warm-start the other variables and leave the embedding out of "
                             "vars_to_warm_start")
        pattern = self.vars_to_warm_start
        if pattern is None:
            raise ValueError("WarmStartSettings(vars_to_warm_start=None) warm-starts nothing: drop warm_start_from")
        if not isinstance(pattern, str):
            pattern = "|".join(f"{name}$" for name in pattern)
        config: dict[str, Any] = {"from": os.fspath(self.ckpt_to_initialize_from), "vars": pattern}
        if self.var_name_to_prev_var_name:
            config["rename"] = dict(self.var_name_to_prev_var_name)
        return config


__all__ = ["WarmStartSettings"]
