"""The phases of ``hookrun train``, in the order :func:`hookrun.runner.trainer.train` runs them.

1. :mod:`~hookrun.runner.training.prepare`: data, placement, graph and hooks (nothing written);
2. :mod:`~hookrun.runner.training.lifecycle`: the run directory locked, then created and written;
3. :mod:`~hookrun.runner.training.session`: the hooks wrapped, the role's session, the step loop;
4. :mod:`~hookrun.runner.training.result`: the ``TrainResult`` and ``summary.json``.

:mod:`~hookrun.runner.training.check` runs the first phase alone (``validate --build``, ``inspect``).
Whatever depends on the kind of process (one process, a cluster's chief, worker or ps; one device or
towers) is asked of the run's role (:mod:`hookrun.runner.roles`).
"""
