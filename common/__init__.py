"""The bottom layer: what every other layer shares. Never imports TensorFlow, pydantic or any hookrun layer.

- :mod:`~hookrun.common.errors`: hookrun's errors and their exit codes (0, 1, 2);
- :mod:`~hookrun.common.files`: crash-safe run-directory writes, per-task names, write failures;
- :mod:`~hookrun.common.suggest`: the one "did you mean" of hookrun;
- :mod:`~hookrun.common.numbers`: the one way a metric's value is printed.

Dependencies flow one way: ``cli`` -> ``runner`` -> ``hooks`` -> ``config_schemas`` -> ``common``
(``estimator`` is a second face beside ``cli``). TensorFlow's internals are not here: only ``hooks`` and
``runner`` may import TensorFlow, so they live in ``hooks/tf_internals.py``, the lowest layer that may.
"""

from __future__ import annotations

# One import name per module: `import common` from the repository root would load a second copy.
if __name__ != "hookrun.common":
    raise ImportError(f"import hookrun.common, not {__name__}: the folder common/ installs as hookrun.common")
