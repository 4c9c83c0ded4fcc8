"""Built-in builder ``dnn_classifier``; its function is in ``builder.py``, imported when used."""
