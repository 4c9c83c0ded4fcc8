"""One input element as ``(features, labels)``: Estimator's rule for a pair or features alone.

Its own module (no imports) so that both the input_fn's checks (:mod:`hookrun.runner.data.input_fn`) and the
``steps_per_run`` loop (:mod:`hookrun.runner.graph.fused`) use it without importing each other.
"""

from __future__ import annotations

from typing import Any


def split_element(element: Any) -> tuple[Any, Any]:
    """``(features, labels)`` of one dataset element (or its ``element_spec``): labels None for features alone.

    Mirrors ``estimator.util.parse_iterator_result``: a tuple (or list) of two is ``(features, labels)``;
    anything else (a tensor, a ``SparseTensor``/``RaggedTensor``, a dict, even one whose values are tuples) is
    the features alone. Tuples of other lengths are refused before (:func:`hookrun.runner.data.input_fn.make_pipeline`).

    Args:
        element: a ``get_next()`` result, a stacked window's slice, or an ``element_spec``.

    Returns:
        ``(features, labels)``; ``labels`` None when the element is features alone.
    """
    if isinstance(element, (tuple, list)) and len(element) == 2:
        return element[0], element[1]
    return element, None


__all__ = ["split_element"]
