r"""The task's TensorFlow server and the cluster's control queues: the part of the cluster that needs TensorFlow.

:mod:`hookrun.runner.cluster.plan` (no TensorFlow) decides who is who and checks the addresses;
this module starts ``tf.distribute.Server`` (:func:`start_server`), runs a parameter server until
the chief's run ends (:func:`serve_ps`) and names the ``FIFOQueue``\ s the tasks signal through
(:func:`control_queue`, :func:`done_queue`). :mod:`hookrun.runner.cluster.session` builds the
session on top. TensorFlow is imported when a function is called, quietly
(:func:`hookrun.runner.tf_env.import_tensorflow`).
"""

from __future__ import annotations

import time
from typing import Any

from hookrun.common.errors import SetupError
from hookrun.runner.cluster.plan import ClusterPlan
from hookrun.runner.tf_env import import_tensorflow

#: Capacity of the control queues (tokens); the chief puts at most a few in each.
QUEUE_CAPACITY = 1024

def control_queue(name: str) -> Any:
    """A queue of ``int32`` tokens shared across the cluster under ``name`` (create it under a ``tf.device``)."""
    tf = import_tensorflow()
    return tf.compat.v1.FIFOQueue(QUEUE_CAPACITY, [tf.int32], shapes=[[]], shared_name=name, name=name)


def done_queue(index: int) -> Any:
    """Parameter server ``index``'s done-queue (create it under ``tf.device('/job:ps/task:<index>')``)."""
    return control_queue(f"done_queue_{index}")


def serve_ps(plan: ClusterPlan, console: Any, verbose: bool = False) -> float:
    """Run this parameter server until the chief's run finishes; return the seconds served.

    Starts ``tf.distribute.Server`` for this task, then blocks on a dequeue from its done-queue
    (``shared_name="done_queue_<i>"``, on this task), which the chief fills when it finishes.
    The dequeue is retried every half second so Ctrl-C is seen.
    """
    tf = import_tensorflow(verbose)
    v1 = tf.compat.v1
    config = v1.ConfigProto(device_filters=[plan.task.device])
    server = start_server(tf, plan, config)
    started = time.monotonic()
    console.print(
        f"[{plan.task.label}] serving variables at {plan.address()}; waiting for the chief to finish",
        markup=False, highlight=False,
    )
    graph = tf.Graph()
    with graph.as_default(), tf.device(plan.task.device):
        dequeue = done_queue(plan.task.index).dequeue()
    with v1.Session(server.target, graph=graph, config=config) as session:
        while True:
            try:
                session.run(dequeue, options=v1.RunOptions(timeout_in_ms=500))
                break
            except tf.errors.DeadlineExceededError:
                continue
    time.sleep(0.2)  # let the chief's enqueue call return before this server goes away
    return time.monotonic() - started


def start_server(tf: Any, plan: ClusterPlan, config: Any) -> Any:
    """Start this task's ``tf.distribute.Server``.

    Raises:
        SetupError: the server could not start (its port was taken since the check).
    """
    spec = tf.train.ClusterSpec(plan.jobs)
    try:
        return tf.distribute.Server(
            spec, job_name=plan.task.job, task_index=plan.task.index, config=config, start=True
        )
    except tf.errors.OpError as err:
        raise SetupError(
            f"{plan.where()} {plan.address()}: TensorFlow could not start this task's server ({err.message}); "
            "is the port in use?"
        ) from None
