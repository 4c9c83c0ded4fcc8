"""The model after training: open a run directory, restore a checkpoint, evaluate, predict, export (issue 15).

``saved_run``: the run directory's config, preprocessing, checkpoints and data input;
``evaluate``: ``hookrun evaluate`` (as ``tf.estimator.Estimator.evaluate``);
``runs``: ``hookrun runs``, the runs under a directory compared (no TensorFlow);
``sweep``: ``hookrun train --sweep``, one run per combination of values.
``inference``: the graph taking raw columns that ``predict`` runs and ``export`` saves;
``predict``: ``hookrun predict`` (as ``Estimator.predict``);
``export``: ``hookrun export`` (as ``Estimator.export_saved_model``);
``output``: their output paths, checked first and written atomically.
"""
