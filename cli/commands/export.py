"""``hookrun export RUN_DIR --output DIR``: a SavedModel taking raw columns, with the preprocessing in its graph."""

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


def export_command(
    run_dir: RunDirArg,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="The SavedModel directory to write.", show_default=False, metavar="DIR",
            parser=non_empty_path,
        ),
    ],
    serving_input_fn: Annotated[
        str | None,
        typer.Option(
            "--serving-input-fn",
            help="An Estimator serving_input_receiver_fn (module:function, importable from the current directory) "
            "returning a ServingInputReceiver; default: the run's graph.serving_input_fn. Its signatures are "
            "Estimator's: serving_default, each export_outputs entry, each receiver alternative.",
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
    """Export a checkpoint as a SavedModel whose serving_default signature takes the raw columns.

    One input per feature column ([batch]: float32 with NaN for missing, string with "" for missing); the
    run's preprocessing and the builder (infer mode) are in the graph. Outputs: predictions, plus
    probabilities and classes for a classifier. A second signature, examples, takes serialized
    tf.train.Example protos. Load it with tf.saved_model.load(DIR).
    """
    import json

    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import reported_errors

    err = OutputConsole(stderr=True)
    with reported_errors(err, debug):
        from hookrun.runner.trained.export import export

        result = export(
            run_dir, output, checkpoint=checkpoint, overwrite=overwrite, verbose=verbose,
            serving_input_fn=serving_input_fn,
        )
        if as_json:
            typer.echo(json.dumps(result.to_json(), indent=2))
            return
        out = OutputConsole()
        out.print(
            f"exported {result.checkpoint} (global step {result.global_step}) to {result.output}",
            highlight=False, soft_wrap=True,
        )
        for key, signature in result.signatures.items():
            inputs = ", ".join(f"{name}: {dtype}" for name, dtype in sorted(signature["inputs"].items()))
            outputs = ", ".join(f"{name}: {dtype}" for name, dtype in signature["outputs"].items())
            method = f" [{signature['method'].rsplit('/', 1)[-1]}]" if signature.get("method") else ""
            out.print(f"  {key}({inputs}) -> {outputs}{method}", highlight=False, soft_wrap=True, markup=False)
        for key, reason in result.excluded.items():
            out.print(f"  left out {key}: {reason}", highlight=False, soft_wrap=True, markup=False)
