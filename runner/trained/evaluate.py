"""``evaluate(run_dir)``: a checkpoint's ``val_loss`` and ``val_<metric>`` on the run's validation rows or on files.

Mirrors ``tf.estimator.Estimator.evaluate``: restore a checkpoint into a graph holding the builder
in ``eval`` mode, run the streaming metrics over every row once, report them. The graph's
evaluation part is the one the ``evaluation`` hook runs during training
(:func:`hookrun.runner.graph.build.build_evaluation`), over the same ``tf.data`` transform with
the run's saved preprocessing, so on the same checkpoint and rows the values are the hook's.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError, TrainingError


@dataclass
class EvalResult:
    """One evaluation of a checkpoint.

    Attributes:
        run_dir: the run directory.
        checkpoint: the checkpoint prefix restored.
        global_step: its ``global_step``.
        data: the files evaluated (absolute), or ``["validation"]`` for the run's own validation rows.
        rows: rows evaluated (count, after a ``drop`` policy).
        metrics: ``val_loss`` (training units) and each ``val_<metric>`` (label units for the built-ins).
        seconds: wall time of the evaluation loop (seconds).
        output: the ``eval-<step>.json`` written (``eval-<step>-<file>.json`` for ``--data`` files).
    """

    run_dir: str
    checkpoint: str
    global_step: int
    data: list[str]
    rows: int
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    output: str = ""

    def to_json(self) -> dict[str, Any]:
        """The result as JSON data (what ``eval-<step>.json`` holds, and ``--json`` prints)."""
        return asdict(self)


def evaluate(
    run_dir: str | Path,
    data: list[str] | None = None,
    checkpoint: str = "latest",
    verbose: bool = False,
    input_fn: str | None = None,
) -> EvalResult:
    """Evaluate a run's checkpoint and write ``<run_dir>/eval-<global_step>.json``.

    Args:
        run_dir: the run directory ``hookrun train`` wrote.
        data: data files (globs, directories; relative to the current directory), or None for the
            run's own validation rows (``data.validation`` or the ``validation_split`` hold-out).
        checkpoint: ``latest``, ``best`` or a checkpoint prefix (see
            :func:`hookrun.runner.trained.saved_run.resolve_checkpoint`).
        verbose: show TensorFlow's INFO logs.
        input_fn: an Estimator ``input_fn`` (``module:function``, beside the current directory first) whose
            ``eval``-mode dataset is evaluated (:func:`hookrun.runner.trained.input_fn_run.evaluate_with_input_fn`);
            a run trained from ``data.input_fn`` defaults to its ``data.eval_input_fn``. Not with ``data``.

    Returns:
        The result.

    A model_fn's ``EstimatorSpec.evaluation_hooks`` (its ``eval`` call) run around the pass as
    Estimator's ``evaluate`` ran them (:mod:`hookrun.runner.session.eval_hooks`).

    Raises:
        SetupError, DataError, ConfigError: no such run or checkpoint, a file missing a feature or
            label column, a checkpoint that does not fit the builder (exit 2); nothing is written.
        TrainingError: an evaluation hook raised (exit 1); nothing is written.
    """
    from hookrun.common.files import atomic_write_text
    from hookrun.runner.graph.build import build_evaluation_graph
    from hookrun.runner.graph.device import resolve_device, session_config
    from hookrun.runner.graph.graft import needed_nodes
    from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits, restore_errors
    from hookrun.runner.tf_env import import_tensorflow
    from hookrun.runner.trained.saved_run import evaluation_input, open_run, resolve_checkpoint

    if input_fn is not None and data is not None:
        raise SetupError("--input-fn and --data: give one of them (the input_fn reads its own data)")
    run = open_run(run_dir, input_fn=data is None)
    validation = None
    examples_read = None
    if input_fn is not None or run.preprocessor is None:
        from hookrun.runner.data.input_fn import input_fn_of
        from hookrun.runner.trained.input_fn_run import evaluation_from_input_fn

        option = "--input-fn" if input_fn is not None else "data.eval_input_fn"
        if input_fn is None:
            input_fn = run.loaded.config.data.eval_input_fn
            if input_fn is None:
                raise SetupError(
                    f"{run.run_dir}: trained from data.input_fn without a data.eval_input_fn; give the data to "
                    "evaluate: --input-fn module:function"
                )
        tf = import_tensorflow(verbose)  # before the user's module imports it: TensorFlow's start-up kept quiet
        function = input_fn_of(input_fn, option)
        prefix, step = resolve_checkpoint(tf, run, checkpoint)
        plan = resolve_device(run.loaded.config.device, len(tf.config.list_physical_devices("GPU")), True)
        graph, _global_step, ev, examples_read = evaluation_from_input_fn(tf, run, function, plan)
    else:
        validation = evaluation_input(run, data)  # reads and checks every row before TensorFlow loads
        tf = import_tensorflow(verbose)
        prefix, step = resolve_checkpoint(tf, run, checkpoint)
        config = run.loaded.config
        plan = resolve_device(config.device, len(tf.config.list_physical_devices("GPU")), True)
        graph, _global_step, ev = build_evaluation_graph(
            tf, config, run.loaded.base_dir, plan, validation, run.preprocessor.label_scale, run_dir=run.run_dir
        )
    v1 = tf.compat.v1
    with graph.as_default():
        # What the pass reads: an optimizer (or anything else) the model_fn builds in eval mode is never run,
        # so its variables are neither restored nor required of the checkpoint.
        targets = [ev.reset_op.name, ev.update_op.name, *(t.name for t in ev.values.values())]
        read_names = {node.name for node in needed_nodes(graph.as_graph_def(), targets).node}
        variables = [v for v in v1.global_variables() if v.op.name in read_names]
        saver = v1.train.Saver(var_list=variables)
        # A model_fn's evaluation_hooks: begin() before the graph is final (Estimator's order); what they
        # create there is not in the checkpoint, so it is initialized after the restore.
        before = set(v1.global_variables()) | set(v1.local_variables())
        try:
            ev.begin_hooks()
        except Exception as err:
            raise _hook_failure(err, "their begin()") from err
        hook_variables = [v for v in v1.global_variables() + v1.local_variables() if v not in before]
        init_hook_variables = v1.variables_initializer(hook_variables)
        tables = v1.tables_initializer()
        graph.finalize()
    started = time.perf_counter()
    check_checkpoint_fits(tf, prefix, variables)  # Saver.restore would not check the shapes
    with v1.Session(graph=graph, config=session_config(tf, plan)) as session:
        with restore_errors(tf, prefix, fix="give a checkpoint of this run"):
            saver.restore(session, prefix)
        session.run([tables, init_hook_variables])
        try:  # as the evaluation hook: every row once, the evaluation hooks around the pass
            metrics = ev.run(session)
        except Exception as err:
            if not ev.evaluation_hooks:
                raise
            raise _hook_failure(err, "the pass") from err
        # an input_fn's examples: the sum of val_loss's weights (each batch's rows), read after the pass
        examples = session.run(examples_read) if validation is None else validation.num_rows
    if validation is None:
        if not examples:
            from hookrun.common.errors import PlacedError

            raise PlacedError(
                option, f"{input_fn} gave no example to evaluate (its dataset ended at once); check its files or filter"
            )
        files = [input_fn] if option == "--input-fn" else None
        names = [str(input_fn)]
    else:
        names = (
            [str(f.path) for f in validation.input.scan.validation.files]
            if data is not None and validation.input.scan.validation is not None
            else ["validation"]
        )
        files = names if data is not None else None
    result = EvalResult(
        run_dir=str(run.run_dir),
        checkpoint=prefix,
        global_step=step,
        data=names,
        rows=int(examples),
        metrics=metrics,
        seconds=time.perf_counter() - started,
    )
    output = run.run_dir / eval_file_name(step, files, input_fn=validation is None)
    result.output = str(output)
    atomic_write_text(output, json.dumps(result.to_json(), indent=2) + "\n")
    return result


def eval_file_name(step: int, files: list[str] | None, input_fn: bool = False) -> str:
    """``eval-<step>.json`` for the run's own validation rows; ``eval-<step>-<stem>.json`` for other data.

    An evaluation on ``--data`` files (stem: the first file's name before its first ``.``) or an
    ``--input-fn`` (stem: its whole ``package.module.function``, so two functions of one package never share a
    file) never replaces the one of the validation rows at the same step (``hookrun runs`` reads that one).
    The stem keeps letters, digits, ``.``, ``_`` and ``-`` (others: ``_``); a longer one than 60 characters
    keeps its last 60 (the function's end).

    Args:
        step: the checkpoint's global step.
        files: the files evaluated (absolute), or ``[module:function]`` of an input function; None for the
            validation rows.
        input_fn: ``files`` names an input function.
    """
    if not files:
        return f"eval-{step}.json"
    stem = files[0].replace(":", ".") if input_fn else Path(files[0]).name.split(".")[0] or "data"
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", stem)
    return f"eval-{step}-{stem[-60:] if input_fn else stem[:60]}.json"


def _hook_failure(err: BaseException, where: str) -> TrainingError:
    """A failure in (or around) a model_fn's ``evaluation_hooks``, as one line: exit 1."""
    from hookrun.runner.session.monitored import _op_error_line

    message = _op_error_line(str(getattr(err, "message", None) or err))  # a TensorFlow error's telling line
    return TrainingError(
        f"evaluation failed in {where} with the model_fn's evaluation_hooks: {type(err).__name__}: {message}"
    )
