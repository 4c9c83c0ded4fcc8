"""Training data, in the order it flows (``docs/architecture.md``, "The data path").

``columns``: what the stages pass on; ``formats/``: one module a file format, and their registry;
``sources``: which files a config names; ``reader``: files -> typed columns (the sample, the split);
``preprocessing``: fitting and applying the preprocessing; ``streaming``: the statistics pass, the
transform and the ``tf.data`` pipeline; ``input_fn``, ``input_state``: the user's own pipeline;
``source``: the run's input behind one interface (:func:`~hookrun.runner.data.source.open_source`).
"""
