"""Serving receivers and export outputs: ``tf.estimator.export``'s classes, for ``hookrun export``.

Mirrors TF 1.15's ``tensorflow_estimator/python/estimator/export/export.py`` (the receivers and the
``build_*_serving_input_receiver_fn`` helpers) and ``tensorflow/python/saved_model/model_utils/export_output.py``
(``PredictOutput``, ``ClassificationOutput``, ``RegressionOutput``), with their checks, their error messages and
the names they used:

- a single feature tensor is wrapped as ``{"feature": t}``; a single receiver tensor as ``{"input": t}``
  (``export_utils.SINGLE_FEATURE_DEFAULT_NAME`` / ``SINGLE_RECEIVER_DEFAULT_NAME``);
- ``build_parsing_serving_input_receiver_fn`` feeds ``{"examples": string [batch]}`` (op
  ``input_example_tensor``);
- a signature's method name is ``tensorflow/serving/predict`` (``PredictOutput``: inputs = the receiver
  tensors, outputs = its dict, a single tensor as ``output``), ``tensorflow/serving/classify``
  (``ClassificationOutput``: input ``inputs``, a single ``string`` tensor of serialized ``tf.train.Example``;
  outputs ``classes`` and/or ``scores``) or ``tensorflow/serving/regress`` (``RegressionOutput``: input
  ``inputs``, output ``outputs``), so TensorFlow Serving's ``Classify`` and ``Regress`` APIs work.

A model_fn written for Estimator needs only its import changed::

    from hookrun.runner.trained.serving import ServingInputReceiver, PredictOutput  # was tf.estimator.export

Importing this module does not import TensorFlow; constructing the classes does (they check tensors).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any

#: ``export_utils.SINGLE_FEATURE_DEFAULT_NAME``: the key of a single (non-dict) feature tensor.
SINGLE_FEATURE_DEFAULT_NAME = "feature"
#: ``export_utils.SINGLE_RECEIVER_DEFAULT_NAME``: the key of a single (non-dict) receiver tensor.
SINGLE_RECEIVER_DEFAULT_NAME = "input"
#: ``export_utils.SINGLE_LABEL_DEFAULT_NAME``.
SINGLE_LABEL_DEFAULT_NAME = "label"

#: ``tf.saved_model`` method names (``signature_constants``), the names TensorFlow Serving dispatches on.
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"

_SINGLE_TENSOR_DEFAULT_NAMES = {
    "feature": SINGLE_FEATURE_DEFAULT_NAME,
    "label": SINGLE_LABEL_DEFAULT_NAME,
    "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
    "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME,
}


def _tf() -> Any:
    """The ``tensorflow`` module, imported as hookrun imports it (quiet)."""
    from hookrun.runner.tf_env import import_tensorflow

    return import_tensorflow()


def _check_tensor(tensor: Any, name: Any, error_label: str = "feature") -> None:
    """``tensor`` is a ``Tensor``, ``SparseTensor`` or ``RaggedTensor`` (as Estimator's ``_check_tensor``).

    Raises:
        ValueError: it is not; the message names the field and key, as TF's did.
    """
    tf = _tf()
    if not isinstance(tensor, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor)):
        fmt_name = f" {name}" if name is not None else ""
        raise ValueError(
            f"{error_label}{fmt_name} must be a Tensor, SparseTensor, or RaggedTensor; got {type(tensor).__name__}."
        )


def _check_tensor_key(name: Any, error_label: str = "feature", allow_ints: bool = False) -> None:
    """A receiver dict's key is a string (or an int where ``allow_ints``), as Estimator's ``_check_tensor_key``.

    Raises:
        ValueError: it is not.
    """
    if not isinstance(name, str):
        if not allow_ints:
            raise ValueError(f"{error_label} keys must be strings: {name!r}.")
        if not isinstance(name, int) or isinstance(name, bool):
            raise ValueError(f"{error_label} keys must be strings or ints: {name!r}.")


def wrap_and_check_input_tensors(tensors: Any, field_name: str, allow_int_keys: bool = False) -> dict[Any, Any]:
    """``tensors`` as a dict of str (or int) -> tensor; mirrors Estimator's ``wrap_and_check_input_tensors``.

    Args:
        tensors: a tensor (wrapped as ``{default name: tensor}``, the name by ``field_name``: ``feature``,
            ``input``, ``label``) or a dict of such tensors.
        field_name: ``feature``, ``label``, ``receiver_tensor`` or ``receiver_tensors_alternative``.
        allow_int_keys: int keys are allowed too (features, labels).

    Returns:
        A new dict (a dict given is copied, not changed).

    Raises:
        ValueError: ``tensors`` is None, a key is not a string (or int), a value not a tensor.
    """
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if not isinstance(tensors, Mapping):
        tensors = {_SINGLE_TENSOR_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        _check_tensor_key(name, error_label=field_name, allow_ints=allow_int_keys)
        _check_tensor(tensor, name, error_label=field_name)
    return dict(tensors)


def _alternatives(value: Any) -> dict[str, dict[str, Any]] | None:
    """``receiver_tensors_alternatives`` checked: None, or a dict name -> (tensor or dict of tensors)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"receiver_tensors_alternatives must be a dict: {value!r}.")
    return {
        name: wrap_and_check_input_tensors(tensors, "receiver_tensors_alternative") for name, tensors in value.items()
    }


class ServingInputReceiver(
    collections.namedtuple("ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])
):
    """What a ``serving_input_fn`` returns; mirrors ``tf.estimator.export.ServingInputReceiver`` (TF 1.15).

    Construct it as Estimator's: ``ServingInputReceiver(features, receiver_tensors,
    receiver_tensors_alternatives=None)``; the checks and wrapping happen in construction.

    Attributes:
        features: dict str (or int) -> ``Tensor``/``SparseTensor``/``RaggedTensor``, what the model_fn gets;
            a single tensor given is wrapped as ``{"feature": tensor}`` (use :class:`TensorServingInputReceiver`
            to pass it as it is).
        receiver_tensors: dict str -> tensor, the default signature's inputs (typically one ``string``
            placeholder of serialized ``tf.train.Example``); a single tensor is wrapped as ``{"input": t}``.
        receiver_tensors_alternatives: None, or name -> dict str -> tensor: each adds signatures
            ``<name>:<output key>`` taking those inputs (e.g. raw features downstream of the parsing).

    Raises:
        ValueError: features or receiver_tensors None, a key not a string (ints allowed in features), a value
            not a tensor, alternatives not a dict (TF 1.15's messages).
    """

    __slots__ = ()

    def __new__(
        cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None
    ) -> ServingInputReceiver:
        """Check and wrap the fields (see the class); raises ValueError as TF 1.15 did."""
        return super().__new__(
            cls,
            wrap_and_check_input_tensors(features, "feature", allow_int_keys=True),
            wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor"),
            _alternatives(receiver_tensors_alternatives),
        )


class TensorServingInputReceiver(
    collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"]
    )
):
    """A receiver whose ``features`` is one tensor, passed as it is; mirrors Estimator's ``TensorServingInputReceiver``.

    For a model_fn that takes a single tensor, not a dict (TF issue 11674). Same arguments as
    :class:`ServingInputReceiver`; the receiver tensors are wrapped into dicts the same way.

    Attributes:
        features: a single ``Tensor``/``SparseTensor``/``RaggedTensor``.
        receiver_tensors: dict str -> tensor.
        receiver_tensors_alternatives: None, or name -> dict str -> tensor.

    Raises:
        ValueError: features None or not a tensor, or as :class:`ServingInputReceiver`.
    """

    __slots__ = ()

    def __new__(
        cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None
    ) -> TensorServingInputReceiver:
        """Check the one feature tensor and wrap the receiver tensors (see the class); raises ValueError."""
        if features is None:
            raise ValueError("features must be defined.")
        _check_tensor(features, None)
        receiver = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(
            cls,
            receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
            receiver.receiver_tensors,
            receiver.receiver_tensors_alternatives,
        )


def build_parsing_serving_input_receiver_fn(
    feature_spec: Mapping[str, Any], default_batch_size: int | None = None
) -> Callable[[], ServingInputReceiver]:
    """A ``serving_input_fn`` fed serialized ``tf.train.Example``; mirrors Estimator's function of this name.

    Args:
        feature_spec: name -> ``tf.io.FixedLenFeature`` / ``VarLenFeature`` / ``RaggedFeature`` (as
            ``tf.feature_column.make_parse_example_spec`` gives).
        default_batch_size: the batch size of the input, or None for any (recommended).

    Returns:
        A function of no arguments returning a :class:`ServingInputReceiver` whose receiver tensors are
        ``{"examples": string [default_batch_size]}`` (placeholder ``input_example_tensor``) and whose
        features are ``tf.io.parse_example``'s.
    """

    def serving_input_receiver_fn() -> ServingInputReceiver:
        """An input_fn that expects a serialized tf.Example."""
        tf = _tf()
        serialized = tf.compat.v1.placeholder(tf.string, [default_batch_size], name="input_example_tensor")
        features = tf.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(
    features: Mapping[str, Any], default_batch_size: int | None = None
) -> Callable[[], ServingInputReceiver]:
    """A ``serving_input_fn`` fed the features themselves; mirrors Estimator's function of this name.

    Args:
        features: name -> a tensor (or anything with ``dtype`` and ``shape``, such as a ``tf.TensorSpec`` or
            a NumPy array) whose shape after the first axis and dtype each placeholder takes.
        default_batch_size: the batch size of the input, or None for any (recommended).

    Returns:
        A function of no arguments returning a :class:`ServingInputReceiver` whose features and receiver
        tensors are the same placeholders, ``[default_batch_size] + shape[1:]``, named as the tensor's op
        (or its key when it has none).
    """

    def serving_input_receiver_fn() -> ServingInputReceiver:
        """A serving_input_receiver_fn that expects features to be fed directly."""
        tf = _tf()
        placeholders = {}
        for key, tensor in features.items():
            shape = tf.TensorShape([default_batch_size]).concatenate(tf.TensorShape(tensor.shape)[1:])
            op = getattr(tensor, "op", None)
            name = getattr(op, "name", None) or key
            placeholders[key] = tf.compat.v1.placeholder(tf.as_dtype(tensor.dtype), shape, name=name)
        return ServingInputReceiver(placeholders, placeholders)

    return serving_input_receiver_fn


class ExportOutput:
    """One output of an exported model, turned into a SignatureDef; mirrors ``tf.estimator.export.ExportOutput``.

    Subclasses: :class:`PredictOutput`, :class:`ClassificationOutput`, :class:`RegressionOutput`.
    """

    _SEPARATOR_CHAR = "/"

    #: the SignatureDef's method name.
    method_name = ""

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
        """The ``SignatureDef`` proto with these inputs (a dict str -> tensor).

        Raises:
            ValueError: the inputs do not fit the output's method (see the subclasses).
        """
        raise NotImplementedError

    def _check_output_key(self, key: Any, error_label: str) -> str:
        if isinstance(key, tuple):
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key!r}.")
        return key

    def _wrap_and_check_outputs(
        self, outputs: Any, single_output_default_name: str, error_label: str | None = None
    ) -> dict[str, Any]:
        tf = _tf()
        if not isinstance(outputs, Mapping):
            outputs = {single_output_default_name: outputs}
        checked: dict[str, Any] = {}
        for key, value in outputs.items():
            error_name = error_label or single_output_default_name
            key = self._check_output_key(key, error_name)
            if not isinstance(value, tf.Tensor):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value!r}.")
            checked[key] = value
        return checked


def _single_string_input(kind: str, receiver_tensors: Mapping[str, Any]) -> Any:
    """The one ``string`` receiver tensor a Classify/Regress signature takes.

    Raises:
        ValueError: more or fewer than one receiver tensor, or not ``string`` (TF's message).
    """
    tf = _tf()
    message = (
        f"{kind} signatures can only accept a single tensor input of type tf.string. Please check to make sure "
        "that you have structured the serving_input_receiver_fn so that it creates a single string placeholder. "
        "If your model function expects multiple inputs, then use `tf.io.parse_example()` to parse the string "
        f"into multiple tensors. Received: {dict(receiver_tensors)}"
    )
    if len(receiver_tensors) != 1:
        raise ValueError(message)
    ((_, examples),) = receiver_tensors.items()
    if not isinstance(examples, tf.Tensor) or tf.as_dtype(examples.dtype) != tf.string:
        raise ValueError(message)
    return examples


class ClassificationOutput(ExportOutput):
    """A classification head's output; mirrors ``tf.estimator.export.ClassificationOutput`` (TF 1.15).

    Its signature is ``tensorflow/serving/classify``: input ``inputs`` (the receiver's single ``string``
    tensor of serialized ``tf.train.Example``), outputs ``classes`` and/or ``scores``.
    Either or both must be set. Only ``classes``: the top-k classes, best first; only ``scores``: one score
    per class id; both: zipped, each score for the class at its index.

    Args:
        scores: float tensor ``[batch, n]`` (probabilities or logits), or None.
        classes: ``string`` tensor ``[batch, n]`` of class labels (not integer ids), or None.

    Raises:
        ValueError: both None, ``scores`` not a floating tensor, ``classes`` not a ``string`` tensor.
    """

    method_name = CLASSIFY_METHOD_NAME

    def __init__(self, scores: Any = None, classes: Any = None) -> None:
        tf = _tf()
        if scores is not None and not (isinstance(scores, tf.Tensor) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores!r}")
        if classes is not None and not (isinstance(classes, tf.Tensor) and tf.as_dtype(classes.dtype) == tf.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes!r}")
        if scores is None and classes is None:
            raise ValueError(
                "Cannot create a ClassificationOutput with empty arguments. At least one of `scores` and "
                "`classes` must be defined."
            )
        self._scores = scores
        self._classes = classes

    @property
    def scores(self) -> Any:
        """The scores tensor, or None."""
        return self._scores

    @property
    def classes(self) -> Any:
        """The classes tensor, or None."""
        return self._classes

    @property
    def outputs(self) -> dict[str, Any]:
        """The signature's outputs: ``classes`` and/or ``scores`` -> tensor."""
        named = {"classes": self._classes, "scores": self._scores}
        return {key: value for key, value in named.items() if value is not None}

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
        """A ``tensorflow/serving/classify`` SignatureDef (``classification_signature_def``).

        Raises:
            ValueError: the receiver is not a single ``string`` tensor.
        """
        examples = _single_string_input("Classification", receiver_tensors)
        return _tf().compat.v1.saved_model.classification_signature_def(examples, self._classes, self._scores)


class RegressionOutput(ExportOutput):
    """A regression head's output; mirrors ``tf.estimator.export.RegressionOutput`` (TF 1.15).

    Its signature is ``tensorflow/serving/regress``: input ``inputs`` (the receiver's single ``string``
    tensor of serialized ``tf.train.Example``), output ``outputs``.

    Args:
        value: floating tensor ``[batch]`` or ``[batch, 1]``, the predicted values.

    Raises:
        ValueError: ``value`` is not a floating tensor.
    """

    method_name = REGRESS_METHOD_NAME

    def __init__(self, value: Any) -> None:
        tf = _tf()
        if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value!r}")
        self._value = value

    @property
    def value(self) -> Any:
        """The value tensor."""
        return self._value

    @property
    def outputs(self) -> dict[str, Any]:
        """The signature's outputs: ``{"outputs": value}``."""
        return {"outputs": self._value}

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
        """A ``tensorflow/serving/regress`` SignatureDef (``regression_signature_def``).

        Raises:
            ValueError: the receiver is not a single ``string`` tensor.
        """
        examples = _single_string_input("Regression", receiver_tensors)
        return _tf().compat.v1.saved_model.regression_signature_def(examples, self._value)


class PredictOutput(ExportOutput):
    """A generic prediction head's output; mirrors ``tf.estimator.export.PredictOutput`` (TF 1.15).

    Its signature is ``tensorflow/serving/predict``: inputs the receiver tensors, outputs these tensors.

    Args:
        outputs: a tensor (output ``output``) or a dict str (or tuple of str, joined by ``/``) -> tensor.

    Raises:
        ValueError: a key not a string, a value not a ``tf.Tensor``.
    """

    method_name = PREDICT_METHOD_NAME
    _SINGLE_OUTPUT_DEFAULT_NAME = "output"

    def __init__(self, outputs: Any) -> None:
        self._outputs = self._wrap_and_check_outputs(outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, "Prediction")

    @property
    def outputs(self) -> dict[str, Any]:
        """Output name -> tensor."""
        return self._outputs

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
        """A ``tensorflow/serving/predict`` SignatureDef (``predict_signature_def``)."""
        from hookrun.runner.graph.builders.heads import _without_deprecation_notice_of

        with _without_deprecation_notice_of("build_tensor_info"):  # the v1 Builder's own call
            return _tf().compat.v1.saved_model.predict_signature_def(dict(receiver_tensors), self._outputs)


#: The default signature's key (``tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY``).
SERVING_DEFAULT = "serving_default"


class NoDefaultSignature(ValueError):
    """Several ``export_outputs`` and none named ``serving_default`` (``export_lib.get_export_outputs``'s error).

    Attributes:
        names: the ``export_outputs`` keys given.
    """

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"export_outputs {', '.join(names)}: none is named {SERVING_DEFAULT!r}")
        self.names = names



def build_signature_defs(
    receiver: Any, export_outputs: Mapping[str, Any] | None, predictions: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """Every SignatureDef of an export, and the ones left out; mirrors ``export_lib.build_all_signature_defs``.

    ``export_outputs`` values are :class:`ExportOutput` objects (anything with ``as_signature_def``), or tensors
    or dicts of tensors (a :class:`PredictOutput`). Without any, ``serving_default`` predicts ``predictions``;
    one output not named ``serving_default`` is also served under that name (``export_lib.get_export_outputs``).
    The receiver's tensors get ``<key>`` signatures, each of its alternatives ``<alternative>:<key>`` ones. A
    signature its inputs do not fit (Classify or Regress on inputs other than one string tensor) is left out,
    with TensorFlow's reason, as Estimator left it out (and logged it).

    Args:
        receiver: a :class:`ServingInputReceiver`-like object (``receiver_tensors``, optional
            ``receiver_tensors_alternatives``); a lone tensor counts as ``{"input": tensor}``.
        export_outputs: ``EstimatorSpec.export_outputs`` (infer mode), or None.
        predictions: what ``serving_default`` predicts without ``export_outputs``.

    Returns:
        ``(signature name -> SignatureDef, signature name -> why it was left out)``.

    Raises:
        NoDefaultSignature: several outputs and none named ``serving_default``.
    """
    from hookrun.runner.graph.builders.heads import _without_deprecation_notice_of

    outputs = dict(export_outputs or {}) or {SERVING_DEFAULT: predictions}
    if SERVING_DEFAULT not in outputs:
        if len(outputs) != 1:
            raise NoDefaultSignature(list(outputs))
        outputs[SERVING_DEFAULT] = next(iter(outputs.values()))
    outputs = {
        key: out if callable(getattr(out, "as_signature_def", None)) else PredictOutput(out)
        for key, out in outputs.items()
    }
    groups = {None: receiver.receiver_tensors, **(getattr(receiver, "receiver_tensors_alternatives", None) or {})}
    defs: dict[str, Any] = {}
    excluded: dict[str, str] = {}
    for group, tensors in groups.items():
        tensors = dict(tensors) if isinstance(tensors, Mapping) else {"input": tensors}
        for key, output in outputs.items():
            name = key if group is None else f"{group}:{key}"
            try:
                with _without_deprecation_notice_of("build_tensor_info"):
                    defs[name] = output.as_signature_def(tensors)
            except ValueError as err:
                excluded[name] = str(err).strip().splitlines()[0]
    return defs, excluded


__all__ = [
    "CLASSIFY_METHOD_NAME",
    "ClassificationOutput",
    "ExportOutput",
    "PREDICT_METHOD_NAME",
    "PredictOutput",
    "REGRESS_METHOD_NAME",
    "RegressionOutput",
    "SINGLE_FEATURE_DEFAULT_NAME",
    "SINGLE_RECEIVER_DEFAULT_NAME",
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
]
