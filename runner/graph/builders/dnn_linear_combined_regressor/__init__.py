"""Built-in builder ``dnn_linear_combined_regressor``; its function is in ``builder.py``, imported when used."""
