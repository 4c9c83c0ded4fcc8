"""Multi-machine training.

``plan``: the cluster plan; ``session``: the cluster session; ``local``: ``--local-cluster``.
"""
