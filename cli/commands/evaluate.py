"""``hookrun evaluate RUN_DIR``: a checkpoint's validation loss and metrics, as the ``evaluation`` hook reports them."""

from __future__ import annotations

from typing import Annotated

import typer

from hookrun.cli.options import CheckpointOption, DebugOption, ResultJsonOption, RunDirArg, VerboseOption


def evaluate_command(
    run_dir: RunDirArg,
    data: Annotated[
        list[str] | None,
        typer.Option(
            "--data",
            help="Data files to evaluate on (CSV or TFRecord, globs, directories; repeatable); default: the run's "
            "own validation rows.",
            show_default=False,
        ),
    ] = None,
    input_fn: Annotated[
        str | None,
        typer.Option(
            "--input-fn",
            help="An Estimator input_fn (module:function, importable from the current directory) whose eval-mode "
            "tf.data.Dataset of (features, labels) is evaluated; default for a run trained with data.input_fn: its "
            "data.eval_input_fn.",
            show_default=False,
            metavar="MODULE:FN",
        ),
    ] = None,
    checkpoint: CheckpointOption = "latest",
    as_json: ResultJsonOption = False,
    verbose: VerboseOption = False,
    debug: DebugOption = False,
) -> None:
    """Evaluate a checkpoint: val_loss and val_<metric>, as the evaluation hook computes them.

    Restores the checkpoint, runs the builder in eval mode over every row once with the run's saved
    preprocessing, prints the values and writes them to RUN_DIR/eval-<step>.json.
    """
    import json

    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import reported_errors

    out = OutputConsole()
    err = OutputConsole(stderr=True)
    with reported_errors(err, debug):
        from hookrun.runner.trained.evaluate import evaluate

        result = evaluate(run_dir, data=data, checkpoint=checkpoint, verbose=verbose, input_fn=input_fn)
        if as_json:
            typer.echo(json.dumps(result.to_json(), indent=2))
            return
        from rich.table import Table

        from hookrun.common.numbers import format_number

        out.print(
            f"checkpoint {result.checkpoint} (global step {result.global_step}), {result.rows:,} "
            f"{'examples' if input_fn or not result.data[0].startswith(('/', 'validation')) else 'rows'}",
            highlight=False, soft_wrap=True,
        )
        table = Table()
        table.add_column("metric")
        table.add_column("value", justify="right")
        for name, value in result.metrics.items():
            table.add_row(name, format_number(value))
        out.print(table)
        out.print(f"written: {result.output}", highlight=False, soft_wrap=True)
