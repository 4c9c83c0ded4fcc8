"""The run directory.

``directory``: its lock and files; ``checkpoints``: finding and recording checkpoints;
``config_change``: comparing the saved config on resume.
"""
