"""The session.

``plan``: the hook plan (TensorFlow-free); ``scaffold``: the ``Scaffold``; ``engine``: the ``hookrun``
engine; ``hooked_run``: the ``_HookedSession`` merge of the hooks' ``SessionRunArgs`` (the engine's
uncached steps, ``eval_hooks``); ``monitored``: the monitored session loop; ``trace``: the lifecycle trace.
"""
