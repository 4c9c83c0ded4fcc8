"""The graph.

``device``: placement; ``builders``: the built-in builders and their registry; ``optimizers``: the
optimizer and ``train_op``; ``build``: the training and evaluation graph; ``tensor_names``: resolving
the names hooks use; ``layers``: the public ``get_variable`` layers (``from hookrun.runner import layers``);
``model_fn``: the Estimator-style builder form (``EstimatorSpec``, ``ModeKeys``).
"""
