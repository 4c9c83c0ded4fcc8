"""Root conftest: makes the shared fixtures of ``tests/conftest.py`` visible to the tests beside the code.

Tests live in ``tests/`` and beside the modules they test (``hooks/*_test.py``, ``runner/*_test.py``).
pytest runs with ``--import-mode=importlib`` (no ``sys.path`` changes), so the repository root is put
on ``sys.path`` here for ``tests.conftest`` to import; its fixtures are re-exported, not registered as
a second plugin (pytest loads ``tests/conftest.py`` itself for ``tests/``).
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.conftest import captured, linear_csv, make_config, run_train, write_module  # noqa: E402, F401
