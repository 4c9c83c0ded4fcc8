"""Data file formats: one module a format (``csv.py``, ``tfrecord.py``, ``jsonl.py``), found by ``registry.py``.

The first stage of the data path (files -> sample and statistics -> transform -> ``tf.data``,
``docs/architecture.md``): a format knows how to read its files, as text cells in pure Python for the
sample, the statistics pass and ``hookrun validate`` (no TensorFlow), and as ``tf.data`` records decoded
into cells for training. :mod:`~hookrun.runner.data.formats.base` is the interface,
:mod:`~hookrun.runner.data.formats.registry` finds the modules (and plug-ins); nothing else in hookrun
tests which format a file is. Adding a format is adding a module: ``docs/architecture.md``, "How to add an
input format".
"""
