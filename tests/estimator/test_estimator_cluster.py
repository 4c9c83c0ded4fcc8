"""``Estimator.train`` under ``TF_CONFIG`` (ps, chief worker, worker): hookrun's cluster runner (issue 26).

Three real processes on 127.0.0.1. Each task's ``input_fn`` (a ``__main__`` function, so called through
``hookrun.estimator``'s wrapper) gets the runner's ``input_context``, as Estimator gave it under a strategy.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

PROGRAM = textwrap.dedent("""
    import sys

    from hookrun import estimator as tf_estimator
    from tests.estimator import tiny_model


    def input_fn(params, input_context=None):
        print("input_context", input_context.num_input_pipelines, input_context.input_pipeline_id, flush=True)
        return tiny_model.train_input_fn(params).shard(input_context.num_input_pipelines,
                                                       input_context.input_pipeline_id)


    config = tf_estimator.RunConfig(save_checkpoints_steps=5, save_summary_steps=None, log_step_count_steps=None)
    estimator = tf_estimator.Estimator(tiny_model.model_fn, model_dir=sys.argv[1], config=config,
                                       params={"learning_rate": 0.1})
    estimator.train(input_fn, max_steps=10)
    print("done", config.task_type, config.task_id, config.is_chief, flush=True)
""")


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_estimator_train_runs_on_a_tf_config_cluster_with_input_context(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM, encoding="utf-8")
    ps, worker0, worker1 = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker0}", f"127.0.0.1:{worker1}"]}
    model_dir = tmp_path / "model"
    processes = []
    try:
        for task_type, index in (("ps", 0), ("worker", 0), ("worker", 1)):
            env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2",
                       TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}}))
            processes.append(subprocess.Popen([sys.executable, str(program), str(model_dir)], env=env, text=True,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        # the workers first: the ps serves until the chief's run finishes, so a failed worker must not leave it waiting
        outputs = [None, *(process.communicate(timeout=180)[0] for process in processes[1:])]
        if any(process.returncode for process in processes[1:]):
            processes[0].kill()
        outputs[0] = processes[0].communicate(timeout=60)[0]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, output in zip(processes[1:], outputs[1:], strict=True):
        assert process.returncode == 0, output
    assert processes[0].returncode == 0, outputs[0]
    assert "done ps 0 False" in outputs[0]
    assert "input_context 2 0" in outputs[1] and "done worker 0 True" in outputs[1]
    assert "input_context 2 1" in outputs[2] and "done worker 1 False" in outputs[2]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["final_global_step"] >= 10
    assert (model_dir / "model.ckpt-10.index").exists() or summary["final_global_step"] > 10
