"""``export(run_dir, output)``: a SavedModel taking raw columns, the preprocessing in its graph (``hookrun export``).

Mirrors ``tf.estimator.Estimator.export_saved_model``: the builder in ``infer`` mode on the inputs of a
serving receiver, the checkpoint's weights, a v1 ``tf.compat.v1.saved_model.Builder`` with the tag
``serve`` (loadable by TF2's ``tf.saved_model.load`` and by TensorFlow Serving). The graph is the one
``hookrun predict`` runs (:func:`hookrun.runner.trained.inference.build_inference_graph`).

Signatures:

- ``serving_default``: one input per feature column, named as the column, ``[batch]``: ``float32``
  for a numeric column (NaN = missing), ``string`` for a categorical one (``""`` = missing); outputs
  ``predictions`` (and ``probabilities``, ``classes`` for a classifier; a model_fn's other prediction
  entries). A model_fn's ``export_outputs`` entry named ``serving_default`` replaces these outputs.
- ``examples``: input ``examples``, ``string [batch]`` of serialized ``tf.train.Example`` (numeric
  features as ``float_list``, categorical as ``bytes_list``; an absent feature is missing), as
  Estimator's ``build_parsing_serving_input_receiver_fn``; the same outputs.
- each other ``export_outputs`` entry of a model_fn, on the raw-column inputs.

A run with TFRecord tensor features (``data.columns`` with a ``shape``, ``varlen`` or raw ``bytes``) is served
serialized records, as Estimator's ``build_parsing_serving_input_receiver_fn``: ``serving_default`` (and each
``export_outputs`` entry) takes the ``examples`` input too, parsed with the run's own parse spec
(:mod:`hookrun.runner.data.tensor_serving`): a fixed shape as ``[batch, *shape]``, a varlen feature as the
``SparseTensor``/``RaggedTensor`` training gave, raw bytes as ``string``; its one-value columns as above.

The vocabularies' ``tf.lookup`` tables are initialized by the SavedModel's ``main_op``
(``tf.compat.v1.tables_initializer()``), which loading runs. The files in the graph's
``ASSET_FILEPATHS`` collection (what ``tf.lookup.TextFileInitializer``, ``index_table_from_file`` and
the vocabulary-file feature columns register) are copied into the SavedModel's ``assets/`` and
re-pointed there, as Estimator's export did (``add_meta_graph_and_variables(assets_collection=...)``):
loading feeds each table the copy's path, so the export loads anywhere, without the original files.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError
from hookrun.runner.trained.inference import EXAMPLES
from hookrun.runner.trained.results import ExportResult
from hookrun.runner.trained.results import check_assets as _check_assets
from hookrun.runner.trained.serving import SERVING_DEFAULT


def _signature(tf: Any, inputs: dict[str, Any], outputs: Any, examples: Any = None) -> Any:
    """A SignatureDef: ``tensorflow/serving/predict`` for a dict of outputs, the method of an ``ExportOutput``.

    An ``ExportOutput`` (:mod:`hookrun.runner.trained.serving`) gives its own (``classify``/``regress`` on
    the serialized ``examples`` input, the only ``string`` input they accept, as Estimator's parsing receiver).

    Raises:
        SetupError: the ``ExportOutput`` does not fit the inputs (its ValueError's first line).
    """
    from hookrun.runner.graph.builders.heads import _without_deprecation_notice_of

    if callable(getattr(outputs, "as_signature_def", None)):
        needs_examples = getattr(outputs, "method_name", "").endswith(("/classify", "/regress")) or type(
            outputs
        ).__name__ in ("ClassificationOutput", "RegressionOutput")  # TF's own classes have no method_name
        given = {"inputs": examples} if examples is not None and needs_examples else inputs
        try:
            with _without_deprecation_notice_of("build_tensor_info"):
                return outputs.as_signature_def(given)
        except ValueError as err:
            raise SetupError(
                f"graph.builder: EstimatorSpec.export_outputs {type(outputs).__name__}: "
                f"{str(err).strip().splitlines()[0]}"
            ) from err

    with _without_deprecation_notice_of("build_tensor_info"):  # the v1 Builder's own call; nothing to act on
        return tf.compat.v1.saved_model.predict_signature_def(inputs, outputs)


def export(
    run_dir: str | Path,
    output: str | Path,
    checkpoint: str = "latest",
    overwrite: bool = False,
    verbose: bool = False,
    serving_input_fn: str | None = None,
) -> ExportResult:
    """Export a run's checkpoint as a SavedModel that takes raw columns (or a serving_input_fn's receiver tensors).

    Args:
        run_dir: the run directory ``hookrun train`` wrote.
        output: the SavedModel directory to write (built beside it, then renamed into place).
        checkpoint: ``latest``, ``best`` or a checkpoint prefix (see
            :func:`hookrun.runner.trained.saved_run.resolve_checkpoint`).
        overwrite: replace ``output`` if it exists.
        verbose: show TensorFlow's INFO logs.
        serving_input_fn: an Estimator ``serving_input_receiver_fn`` (``module:function``), else the run's
            ``graph.serving_input_fn``; with either, the signatures are Estimator's on its receiver
            (:func:`hookrun.runner.trained.input_fn_run.export_with_serving_input_fn`). A run trained from
            ``data.input_fn`` needs one.

    Returns:
        The result.

    Raises:
        SetupError, ConfigError: no such run or checkpoint, ``output`` exists (without ``overwrite``) or its
            directory does not, ``output`` holds a glob character or bytes that are not UTF-8 (its variables
            could not be loaded), a checkpoint that does not fit the builder, a builder that fails in ``infer``
            mode, an ``export_outputs`` signature named ``examples`` (exit 2); nothing is written.
    """
    from hookrun.runner.data.source import saved_source
    from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits, restore_errors
    from hookrun.runner.run_dir.directory import check_usable_path
    from hookrun.runner.tf_env import import_tensorflow
    from hookrun.runner.trained.inference import build_inference_graph
    from hookrun.runner.trained.output import atomic_directory, check_not_replacing, check_output_path
    from hookrun.runner.trained.saved_run import open_run, resolve_checkpoint

    started = time.perf_counter()
    run = open_run(run_dir, input_fn=True)
    source = saved_source(run.loaded, run.preprocessor, run.run_dir)
    option = "--serving-input-fn" if serving_input_fn is not None else "graph.serving_input_fn"
    serving_input_fn = source.serving_function(serving_input_fn)  # an input_fn run without one: refused here
    if serving_input_fn is not None:
        from hookrun.runner.trained.input_fn_run import export_with_serving_input_fn

        return export_with_serving_input_fn(run, serving_input_fn, option, output, checkpoint, overwrite, verbose)
    target = check_output_path(output, overwrite, "directory")
    # a SavedModel's variables are a checkpoint TensorFlow globs when it loads them: one in `m[1]` never loads
    check_usable_path(target, "--output", limit=None)
    check_not_replacing(target, [run.run_dir], hook_paths=run.hook_paths())
    tf = import_tensorflow(verbose)
    prefix, step = resolve_checkpoint(tf, run, checkpoint)
    built = build_inference_graph(tf, run, examples=True, source=source)  # the source's receiver
    v1 = tf.compat.v1
    if EXAMPLES in built.export_outputs:
        raise SetupError(
            f"graph.builder: EstimatorSpec.export_outputs names a signature {EXAMPLES!r}, the name of hookrun's "
            "tf.train.Example signature; rename it"
        )
    with built.graph.as_default():
        variables = v1.global_variables()
        saver = v1.train.Saver(var_list=variables)
        main_op = v1.tables_initializer(name="main_op")
        assets = v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS)
        check_checkpoint_fits(tf, prefix, variables)
        # a run with tensor features is served serialized records only (its tensors are parsed from them)
        inputs = {EXAMPLES: built.examples} if run.loaded.config.data.tensor_features else built.inputs
        signatures = {SERVING_DEFAULT: _signature(tf, inputs, built.outputs)}
        signatures[EXAMPLES] = _signature(
            tf, {EXAMPLES: built.examples}, built.export_outputs.get(SERVING_DEFAULT, built.outputs)
        )
        for key, outputs in built.export_outputs.items():
            signatures[key] = _signature(tf, inputs, outputs, built.examples)
        with v1.Session(graph=built.graph) as session:
            _check_assets(session, assets)
            with restore_errors(tf, prefix):
                saver.restore(session, prefix)
            with atomic_directory(target) as directory:
                builder = v1.saved_model.Builder(str(directory))
                builder.add_meta_graph_and_variables(
                    session,
                    [v1.saved_model.tag_constants.SERVING],
                    signature_def_map=signatures,
                    main_op=main_op,
                    assets_collection=assets or None,
                    strip_default_attrs=True,
                    clear_devices=True,
                )
                builder.save()
    described = {
        key: {
            "inputs": {name: tf.dtypes.as_dtype(info.dtype).name for name, info in signature.inputs.items()},
            "outputs": {name: tf.dtypes.as_dtype(info.dtype).name for name, info in signature.outputs.items()},
        }
        for key, signature in signatures.items()
    }
    return ExportResult(
        run_dir=str(run.run_dir),
        checkpoint=prefix,
        global_step=step,
        output=str(target),
        signatures=described,
        seconds=time.perf_counter() - started,
    )
