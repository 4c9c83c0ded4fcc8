"""The hook registry: hook ``type`` -> the function that builds it.

Hook modules import TensorFlow, so they are imported only when a hook of
that type is built; the registry itself and ``list-hooks`` never import it.

To add a hook: write its config in ``config_schemas/hooks/<type>.py``, its
implementation in ``hooks/<type>.py`` with ``build(config, ctx)``, and add
one line to :data:`HOOK_BUILDERS`.
"""

from __future__ import annotations

import importlib
from typing import Any

from hookrun.config_schemas.hooks import HOOK_CONFIG_BY_TYPE, HookConfig
from hookrun.hooks.context import HookContext

#: Hook type -> "module:function" that builds it from (config, ctx).
HOOK_BUILDERS: dict[str, str] = {
    "stop_at_step": "hookrun.hooks.stop_at_step:build",
    "checkpoint_saver": "hookrun.hooks.checkpoint_saver:build",
    "logging_tensor": "hookrun.hooks.logging_tensor:build",
    "nan_tensor": "hookrun.hooks.nan_tensor:build",
    "summary_saver": "hookrun.hooks.summary_saver:build",
    "step_counter": "hookrun.hooks.step_counter:build",
    "global_step_waiter": "hookrun.hooks.global_step_waiter:build",
    "progress_bar": "hookrun.hooks.progress_bar:build",
    "history_saver": "hookrun.hooks.history_saver:build",
    "evaluation": "hookrun.hooks.evaluation:build",
    "early_stopping": "hookrun.hooks.early_stopping:build",
    "custom": "hookrun.hooks.custom:build",
}

assert set(HOOK_BUILDERS) == set(HOOK_CONFIG_BY_TYPE), "every hook config needs a builder, and back"


def build_hook(config: HookConfig, ctx: HookContext) -> Any:
    """Build the ``tf.compat.v1.train.SessionRunHook`` for one ``hooks:`` entry.

    Args:
        config: the validated hook config.
        ctx: the runner's context.

    Returns:
        A ``SessionRunHook`` instance.

    Raises:
        UnknownTensorError: the hook names an unknown tensor.
        HookConfigError: the hook's settings do not fit the graph (e.g. ``evaluation`` without validation data).
        SetupError: a custom hook does not import.
    """
    module, _, func = HOOK_BUILDERS[config.type].partition(":")  # type: ignore[attr-defined]
    return getattr(importlib.import_module(module), func)(config, ctx)
