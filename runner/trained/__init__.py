"""The model after training: open a run directory, restore a checkpoint, evaluate it (issue 15).

``saved_run``: the run directory's config, preprocessing, checkpoints and data input;
``evaluate``: ``hookrun evaluate`` (as ``tf.estimator.Estimator.evaluate``);
``runs``: ``hookrun runs``, the runs under a directory compared (no TensorFlow);
``sweep``: ``hookrun train --sweep``, one run per combination of values.
"""
