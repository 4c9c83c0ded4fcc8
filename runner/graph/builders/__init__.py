"""Graph builders: one built-in a file, plus the registry.

To add a built-in builder: write ``runner/graph/builders/<name>.py`` with a
function ``<name>(features, labels, params) -> GraphSpec``, add its params
model to ``config_schemas/builders.py``, and add it to ``BUILTINS`` in
``registry.py``.
"""

from hookrun.runner.graph.builders.spec import GraphSpec

__all__ = ["GraphSpec"]
