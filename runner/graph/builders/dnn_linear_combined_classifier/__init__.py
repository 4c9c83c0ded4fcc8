"""Built-in builder ``dnn_linear_combined_classifier``; its function is in ``builder.py``, imported when used."""
