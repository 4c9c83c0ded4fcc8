"""``summary_saver``: TensorFlow's ``SummarySaverHook`` over scalar summaries of named tensors."""

from __future__ import annotations

from typing import Any

from hookrun.config_schemas.hooks import SummarySaverConfig
from hookrun.hooks.context import HookContext


def build(config: SummarySaverConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.SummarySaverHook`` writing one scalar per named tensor.

    Each name in ``tensors`` becomes a scalar summary tagged exactly ``name``
    (``:`` replaced by ``_``; kept out of the global ``SUMMARIES``
    collection); they are merged into the hook's ``summary_op``.

    When it fires (TensorFlow's behaviour): ``before_run`` asks for the
    summaries on the first step and every ``save_steps`` global steps or
    ``save_secs`` seconds; ``after_run`` writes them to an event file in
    ``output_dir``; ``end`` flushes the writer.

    Args:
        config: ``save_steps`` xor ``save_secs``, ``tensors`` (names), ``output_dir``
            (relative to the run directory).
        ctx: the runner's context.
    """
    v1 = ctx.tf.compat.v1
    # The raw op, so the tag is exactly the name: ``v1.summary.scalar`` tags with its op's unique name,
    # which is ``loss_1`` when the graph already has an op ``loss``.
    scalars = [
        ctx.tf.raw_ops.ScalarSummary(tags=name.replace(":", "_"), values=ctx.tensors.resolve(name))
        for name in config.tensors
    ]
    return v1.train.SummarySaverHook(
        save_steps=config.save_steps,
        save_secs=config.save_secs,
        output_dir=str(ctx.resolve_dir(config.output_dir)),
        summary_op=v1.summary.merge(scalars),
    )
