"""One way to print a metric's value, wherever hookrun prints one (no TensorFlow).

The evaluation line, the history table, the best-checkpoint line and ``hookrun runs`` all show
``val_rmse`` of the demo as ``52,243.4``, not as ``52,243.4`` in one place, ``52243.4`` in the next and
``5.224e+04`` in a third (issue 29).
"""

from __future__ import annotations

import math


def format_number(value: float | int | None) -> str:
    """A metric or loss value as people read it: ``52,243.4``, ``142.6``, ``0.3573``, ``0.5000``, ``1.230e-05``.

    From 1,000 up to 10^9: thousands separated, one decimal. Below 1,000 and from 10^9: 4 significant
    digits, trailing zeros kept so a column's values line up (``%#.4g``, scientific below 10^-4 and from
    10^9). NaN and infinities: ``nan``, ``inf``.

    Args:
        value: the number (any unit), or None.

    Returns:
        The text; ``""`` for None. An ``int`` (a step, a count) is printed whole, thousands separated.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    value = float(value)
    if not math.isfinite(value):
        return f"{value}"
    if 1000 <= abs(value) < 1e9:
        return f"{value:,.1f}"
    return f"{value:#.4g}"
