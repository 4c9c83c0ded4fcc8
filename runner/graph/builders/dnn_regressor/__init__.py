"""Built-in builder ``dnn_regressor``; its function is in ``builder.py``, imported when used."""
