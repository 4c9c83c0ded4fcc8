"""Graph builders: one built-in a folder, found by the registry (``registry.py``), plus shared code.

To add a built-in builder ``<name>``: write ``runner/graph/builders/<name>/builder.py`` with a function
``<name>(features, labels, params) -> GraphSpec`` (or a model_fn), an ``__init__.py``, its params model (a
``BuilderParams`` subclass with ``builder = "<name>"``) in ``config_schemas/builders.py``, and its test. Nothing
else lists builders. Shared code: ``spec.py`` (``GraphSpec``), ``heads.py`` (the dense builders' heads),
``canned/`` (TF 1.15's premade models and YAML feature columns).
"""

from hookrun.runner.graph.builders.spec import GraphSpec

__all__ = ["GraphSpec"]
