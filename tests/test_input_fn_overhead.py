"""What hookrun adds to each step of a user's input_fn pipeline (issue 24's bench row), counted, not timed.

``benchmarks/input_fn_bench.py`` times hookrun with ``stop_at_step`` alone beside the raw ``make_callable(train_op)``
loop, and ``benchmarks/input_fn_probe.py`` showed that the two run the same thing: one session call a step, on the
model_fn's own train op, nothing fetched, no ``RunOptions``, no feeds. These tests pin that, so a per-step fetch
(a ``global_step`` read), a second call or an op added to the step fails here rather than as a slower bench row.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from hookrun.runner.config import load_config
from hookrun.runner.session import engine

#: tests/input_fn_program.py's params, its data repeated without end: ``stop_at_step`` ends the run.
PARAMS = {"rows": 64, "batch": 16, "epochs": None, "learning_rate": 0.5}


@pytest.fixture
def program(write_module) -> str:
    """tests/input_fn_program.py under a unique name (its input_fn and model_fn, with its own train op)."""
    from .test_input_fn import PROGRAM

    return write_module("input_fn_program", PROGRAM.read_text())


@pytest.fixture
def session_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, tuple[str, ...], bool]]:
    """Every ``TF_SessionRun_wrapper`` call of the run: (``step`` for the engine's step call, else ``run``, the number
    of tensors fetched, the names of the ops targeted, whether it had feeds, options or run metadata)."""
    from tensorflow.python.client import pywrap_tf_session
    from tensorflow.python.client import session as session_module

    calls: list[tuple[str, int, tuple[str, ...], bool]] = []

    def recorder(kind: str, original: Any) -> Any:
        def record(handle: Any, options: Any, feeds: Any, fetches: Any, targets: Any, metadata: Any) -> Any:
            names = tuple(pywrap_tf_session.TF_OperationName(op) for op in targets)
            calls.append((kind, len(fetches), names, bool(feeds) or options is not None or metadata is not None))
            return original(handle, options, feeds, fetches, targets, metadata)

        return record

    assert engine._session_run is not None  # this TensorFlow has the C call the engine's step plans make
    monkeypatch.setattr(engine, "_session_run", recorder("step", engine._session_run))
    wrapper = session_module.tf_session.TF_SessionRun_wrapper  # Session.run's and make_callable's C call
    monkeypatch.setattr(session_module.tf_session, "TF_SessionRun_wrapper", recorder("run", wrapper))
    return calls


def _train(tmp_path: Any, program: str, run_train: Any, last_step: int) -> Any:
    """``hookrun train`` of the program's input_fn and model_fn with ``stop_at_step`` alone, into a new run dir."""
    config = {
        "name": "input-fn-overhead",
        "graph": {"builder": f"{program}:model_fn", "params": PARAMS},
        "data": {"input_fn": f"{program}:input_fn", "seed": 0},
        "hooks": [{"type": "stop_at_step", "last_step": last_step}],
    }
    path = tmp_path / f"config-{last_step}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return run_train(load_config(path), run_dir=tmp_path / f"run-{last_step}")


def test_each_step_is_one_session_call_on_the_model_fns_train_op_fetching_nothing(
    tmp_path, program, run_train, session_calls
):
    """12 steps: 12 step calls, each targeting the model_fn's train op alone (GradientDescent), no tensor fetched,
    no feeds, options or metadata; every other call (initialisation, the step clock's reads) is per run, not per
    step: 24 steps make exactly 12 calls more, all of them step calls."""
    result = _train(tmp_path, program, run_train, 12)
    assert result.final_global_step == 12
    steps = [call for call in session_calls if call[0] == "step"]
    assert steps == [("step", 0, ("GradientDescent",), False)] * 12
    others = len(session_calls) - len(steps)

    session_calls.clear()
    result = _train(tmp_path, program, run_train, 24)
    assert result.final_global_step == 24
    assert [call for call in session_calls if call[0] == "step"] == [("step", 0, ("GradientDescent",), False)] * 24
    assert len(session_calls) - 24 == others
