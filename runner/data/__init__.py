"""Training data.

``reader``: reading the CSV files; ``preprocessing``: fitting and applying the preprocessing.
"""
