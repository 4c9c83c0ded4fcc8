"""Built-in builder ``linear_classifier``; its function is in ``builder.py``, imported when used."""
