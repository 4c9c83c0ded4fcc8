"""The session.

``plan``: the hook plan (TensorFlow-free); ``scaffold``: the ``Scaffold``; ``engine``: the ``hookrun``
engine; ``monitored``: the monitored session loop; ``trace``: the lifecycle trace.
"""
