"""The ``device:`` key's tower form: a list of devices, one model tower on each (no TensorFlow import).

``device: [gpu:0, gpu:1]`` (or ``[cpu:0, cpu:1, cpu:2, cpu:3]``) runs K synchronous data-parallel towers
in one graph (:mod:`hookrun.runner.graph.towers`); ``data.batch_size`` is the global batch, split evenly
between them (on a ps cluster: each worker's batch, split between its own K towers). See docs/devices.md,
"Several devices".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hookrun.config_schemas.bounds import MAX_GPU_INDEX

#: One entry of the tower list: ``cpu:N`` or ``gpu:N``.
TOWER_PATTERN = re.compile(r"^(cpu|gpu):(\d{1,3})$")
#: Most towers in one graph.
MAX_TOWERS = 64
TOWER_FORM = f"a list of cpu:N or gpu:N (N = 0 to {MAX_GPU_INDEX}), one type, each once, at most {MAX_TOWERS}"


def check_towers(devices: Sequence[str]) -> list[str]:
    """Check the tower list of ``device:``; return it normalised (lower case, no spaces).

    Args:
        devices: the YAML list, e.g. ``["gpu:0", "gpu:1"]``.

    Returns:
        The same devices, in order.

    Raises:
        ValueError: an empty list, an entry not ``cpu:N``/``gpu:N``, CPUs mixed with GPUs, an entry twice,
            or more than :data:`MAX_TOWERS` entries (one line naming the entry and the fix).
    """
    if not devices:
        raise ValueError(f"device: an empty list; give {TOWER_FORM}, or one device such as `cpu`")
    if len(devices) > MAX_TOWERS:
        raise ValueError(f"device: {len(devices)} towers; at most {MAX_TOWERS}")
    normal = []
    for entry in devices:
        text = str(entry).strip().lower()
        if not isinstance(entry, str) or not TOWER_PATTERN.match(text):
            hint = "; name each device with its index, e.g. `gpu:0`" if text in ("cpu", "gpu", "auto") else ""
            raise ValueError(f"device: list entry {entry!r} is not cpu:N or gpu:N{hint}")
        normal.append(text)
    kinds = {entry.split(":")[0] for entry in normal}
    if len(kinds) > 1:
        raise ValueError(f"device: {normal} mixes CPUs and GPUs; towers run on one kind of device")
    seen: set[str] = set()
    for entry in normal:
        if entry in seen:
            raise ValueError(f"device: {entry} is listed twice; each tower needs its own device")
        seen.add(entry)
    return normal


def nearest_divisible(batch_size: int, towers: int) -> tuple[int, int]:
    """The batch sizes nearest ``batch_size`` below and above it that divide by ``towers`` (both >= ``towers``)."""
    below = max(towers, batch_size - batch_size % towers)
    above = below if below > batch_size else batch_size + (towers - batch_size % towers)
    return below, above


def batch_message(batch_size: int, towers: int, per_worker: bool = False) -> str | None:
    """The error for a ``data.batch_size`` that does not split evenly between ``towers``, else None.

    Args:
        batch_size: ``data.batch_size`` (rows).
        towers: K, the entries of ``device:``.
        per_worker: the config has a ``cluster:``, where ``data.batch_size`` is each worker's batch (split between
            that worker's K towers), not the global batch of one process.
    """
    if batch_size % towers == 0:
        return None
    below, above = nearest_divisible(batch_size, towers)
    sizes = f"{below} or {above}" if below != above else str(above)
    what = (
        f"is each worker's batch on the cluster, split between its {towers} towers"
        if per_worker
        else f"is the global batch of {towers} towers"
    )
    return f"data.batch_size {batch_size} {what} (device: a list) and must divide by {towers}; use {sizes}"
