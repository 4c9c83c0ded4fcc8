"""``hookrun predict RUN_DIR --data FILES --output preds.csv``: one row of predictions per input row."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hookrun.cli.options import (
    CheckpointOption,
    DebugOption,
    OverwriteOption,
    ResultJsonOption,
    RunDirArg,
    VerboseOption,
    non_empty_path,
)


def predict_command(
    run_dir: RunDirArg,
    output: Annotated[
        Path, typer.Option(
            "--output", "-o", help="The file to write: .csv, or .jsonl (one JSON record per row, arrays whole).",
            show_default=False,
            metavar="FILE", parser=non_empty_path,
        )
    ],
    data: Annotated[
        list[str] | None,
        typer.Option(
            "--data",
            help="Data files to predict (CSV or TFRecord, globs, directories; repeatable), with the model's feature "
            "columns; a label column is ignored.",
            show_default=False,
            metavar="FILES",
        ),
    ] = None,
    input_fn: Annotated[
        str | None,
        typer.Option(
            "--input-fn",
            help="Instead of --data: an Estimator input_fn (module:function, importable from the current "
            "directory) called in infer mode; every key of the predictions dict is written, one record per "
            "example (.jsonl: arrays included; .csv: one value per key).",
            show_default=False,
            metavar="MODULE:FN",
        ),
    ] = None,
    checkpoint: CheckpointOption = "latest",
    overwrite: OverwriteOption = False,
    as_json: ResultJsonOption = False,
    verbose: VerboseOption = False,
    debug: DebugOption = False,
) -> None:
    """Predict every row of the data files (or every example of --input-fn) with a checkpoint.

    Columns: row (the input row's index), then the prediction: the value for a regressor (label units), the
    class and probability_<class> per class for a classifier. The rows go through the run's saved
    preprocessing; the builder runs in infer mode (no dropout). With --input-fn the model_fn gets the
    input_fn's features untouched, and every key of its predictions dict is written per example.
    """
    import json

    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import reported_errors

    err = OutputConsole(stderr=True)
    with reported_errors(err, debug):
        from hookrun.runner.trained.predict import predict

        result = predict(
            run_dir, data, output, checkpoint=checkpoint, overwrite=overwrite, verbose=verbose, input_fn=input_fn
        )
        if as_json:
            typer.echo(json.dumps(result.to_json(), indent=2))
            return
        OutputConsole().print(
            f"{result.rows:,} {'examples' if input_fn else 'rows'} predicted with {result.checkpoint} "
            f"(global step {result.global_step}); "
            f"written: {result.output} ({', '.join(result.columns)})",
            highlight=False, soft_wrap=True,
        )
