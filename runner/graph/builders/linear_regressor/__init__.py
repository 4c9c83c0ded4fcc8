"""Built-in builder ``linear_regressor``; its function is in ``builder.py``, imported when used."""
