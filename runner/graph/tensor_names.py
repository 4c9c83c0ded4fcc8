"""The tensor names of a built graph: what hooks may name, and the check of every name a config gives.

Behind ``hookrun inspect CONFIG`` (:func:`graph_inventory`) and the check before any hook is built
(:func:`check_tensor_names`): every unknown name of every hook reported at once, each with a
"did you mean" over the whole graph.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hookrun.common.suggest import closest
from hookrun.config_schemas.loader import ConfigIssue, LoadedConfig
from hookrun.hooks.context import TensorNames, UnfedTensorError, UnknownTensorError

#: dtypes a session cannot hand back as a value (handles, dataset variants); listed only for variables.
UNFETCHABLE_DTYPES = ("resource", "variant")


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the graph.

    Attributes:
        name: the tensor name, ``op_name:index`` (``hidden_0/kernel:0``).
        dtype: its dtype's name (``float32``; ``resource`` for a variable's handle).
        shape: its static shape, ``None`` per unknown dimension; ``None`` for an unknown rank.
        op: the type of the op that makes it (``MatMul``, ``VarHandleOp``).
        reads: for a resource variable's handle, the tensor that is fetched instead (the variable's
            ``<name>/Read/ReadVariableOp:0``); else None.
    """

    name: str
    dtype: str
    shape: list[int | None] | None
    op: str
    reads: str | None = None


@dataclass(frozen=True)
class AliasInfo:
    """A short name hooks may use (``loss``, ``global_step``, a metric) and the tensor it resolves to."""

    alias: str
    tensor: TensorInfo


@dataclass(frozen=True)
class VariableInfo:
    """A variable: its name (``hidden_0/kernel``), dtype, shape, whether trainable, and the tensor fetched for it."""

    name: str
    dtype: str
    shape: list[int | None] | None
    trainable: bool
    reads: str


@dataclass
class GraphInventory:
    """What ``hookrun inspect`` prints: the graph's nameable tensors, the aliases and the variables.

    Attributes:
        device: where the model's ops are placed (``/device:CPU:0``).
        aliases: the short names, in the order the graph defines them.
        tensors: every tensor a hook may name, sorted by name (resource and variant tensors left out,
            except the variables' handles, which read as the variable).
        variables: the global variables (``trainable`` tells the trainable ones), in creation order.
    """

    device: str
    aliases: list[AliasInfo] = field(default_factory=list)
    tensors: list[TensorInfo] = field(default_factory=list)
    variables: list[VariableInfo] = field(default_factory=list)

    def filtered(self, pattern: str | None) -> GraphInventory:
        """Only the entries whose name matches ``pattern`` (see :func:`name_matches`); all with None."""
        if not pattern:
            return self
        return GraphInventory(
            device=self.device,
            aliases=[a for a in self.aliases if name_matches(a.alias, pattern) or name_matches(a.tensor.name, pattern)],
            tensors=[t for t in self.tensors if name_matches(t.name, pattern)],
            variables=[v for v in self.variables if name_matches(v.name, pattern)],
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict.

        Keys: ``device``, ``aliases`` (``alias`` plus the tensor's fields), ``tensors``,
        ``trainable_variables`` and ``global_variables``.
        """
        return {
            "device": self.device,
            "aliases": [{"alias": a.alias, **asdict(a.tensor)} for a in self.aliases],
            "tensors": [asdict(t) for t in self.tensors],
            "trainable_variables": [asdict(v) for v in self.variables if v.trainable],
            "global_variables": [asdict(v) for v in self.variables],
        }


def name_matches(name: str, pattern: str) -> bool:
    """Whether ``name`` matches ``pattern``.

    A glob (``fnmatch``, case-sensitive) when ``pattern`` holds ``*``, ``?`` or ``[``, else a
    case-insensitive substring.
    """
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern.lower() in name.lower()


def _shape(tensor: Any) -> list[int | None] | None:
    shape = tensor.shape
    return None if shape.rank is None else list(shape.as_list())


def tensor_info(tensor: Any, reads: str | None = None) -> TensorInfo:
    """A :class:`TensorInfo` for a ``tf.Tensor``."""
    return TensorInfo(tensor.name, tensor.dtype.name, _shape(tensor), tensor.op.type, reads)


def graph_inventory(tf: Any, graph: Any, named: dict[str, Any], device: str) -> GraphInventory:
    """List a built graph's nameable tensors, aliases and variables.

    Args:
        tf: the ``tensorflow`` module.
        graph: the ``tf.Graph``.
        named: the aliases, name -> tensor or variable (``BuiltGraph.named``).
        device: the model's device, for display.

    Returns:
        The inventory. An alias that is a variable (``global_step``) shows the tensor a fetch of it
        reads (``global_step/Read/ReadVariableOp:0``), as do the variables' handles
        (``global_step:0``, dtype ``resource``), since fetching a handle gives no value.
    """
    names = TensorNames(named=named, graph=graph)
    inventory = GraphInventory(device=device)
    for alias, value in named.items():
        tensor = value if isinstance(value, tf.Tensor) else names.readable(_handle_or_tensor(value))
        inventory.aliases.append(AliasInfo(alias, tensor_info(tensor)))
    with graph.as_default():
        for variable in tf.compat.v1.global_variables():
            readable = names.readable(_handle_or_tensor(variable))
            inventory.variables.append(
                VariableInfo(
                    variable.op.name,
                    variable.dtype.base_dtype.name,
                    _shape(variable),
                    bool(getattr(variable, "trainable", False)),
                    readable.name,
                )
            )
    tensors: list[TensorInfo] = []
    for op in graph.get_operations():
        for output in op.outputs:
            reads = None
            if output.dtype.name in UNFETCHABLE_DTYPES:
                if op.type != "VarHandleOp":
                    continue
                reads = names.readable(output).name
            tensors.append(tensor_info(output, reads))
    inventory.tensors = sorted(tensors, key=lambda t: t.name)
    return inventory


def _handle_or_tensor(value: Any) -> Any:
    """A resource variable's handle tensor, or the value itself (a tensor, a ref variable)."""
    handle = getattr(value, "handle", None)
    return handle if handle is not None else value


def candidate_names(graph: Any, named: Sequence[str]) -> list[str]:
    """Every name a hook may give, once each: the aliases, each tensor (``x:0``) and each single-output op (``x``)."""
    names = list(named)
    for op in graph.get_operations():
        outputs = [o for o in op.outputs if o.dtype.name not in UNFETCHABLE_DTYPES or op.type == "VarHandleOp"]
        names.extend(o.name for o in outputs)
        if len(op.outputs) == 1 and outputs:
            names.append(op.name)
    return list(dict.fromkeys(names))  # an alias may also be an op's name (`loss`)


def did_you_mean(name: str, candidates: Sequence[str], n: int = 3) -> list[str]:
    """Up to ``n`` names of ``candidates`` closest to ``name``, best first.

    Ranked by :func:`hookrun.common.suggest.closest`; without a match, the ``:0`` output
    suffix is dropped and op names compared.
    """
    close = closest(name, candidates, n=n)
    if ":" in name and not close:  # `hiden_0/kernel:0` -> compare op names too
        close = closest(name.rsplit(":", 1)[0], candidates, n=n)
    return close


def check_tensor_names(
    loaded: LoadedConfig, hooks: Sequence[tuple[int, Any]], names: TensorNames
) -> list[ConfigIssue]:
    """Resolve every tensor name the hooks give; one issue per unknown name, all of them.

    Args:
        loaded: the config (for the file:line:column of each name).
        hooks: ``(index in hooks:, hook config)`` of the hooks this task runs.
        names: the built graph's name resolution.

    Returns:
        One error per unknown name, at that name's place (``hooks[2].tensors[1]``), with up to three
        close names from the whole graph (aliases, tensors, ops), or nothing when every name resolves.
    """
    issues: list[ConfigIssue] = []
    candidates: list[str] | None = None
    for index, hook in hooks:
        for where, name in hook.tensor_names():
            try:
                names.resolve(name)
            except UnfedTensorError as err:  # it exists, but is never computed (session.steps_per_run > 1)
                issues.append(loaded.issue(("hooks", index, *where), str(err)))
            except UnknownTensorError:
                if candidates is None:
                    candidates = candidate_names(names.graph, list(names.named))
                issues.append(loaded.issue(("hooks", index, *where), _unknown_message(name, names, candidates)))
    return issues


def _unknown_message(name: str, names: TensorNames, candidates: Sequence[str]) -> str:
    """Why ``name`` names no tensor: an op with several outputs or none, or no such name (with close ones)."""
    op = None
    if ":" not in name:
        try:
            op = names.graph.get_operation_by_name(name)
        except (KeyError, ValueError):
            op = None
    if op is not None and op.outputs:
        outputs = ", ".join(f"`{o.name}`" for o in op.outputs)
        return f"op {name!r} has {len(op.outputs)} outputs; name one of them: {outputs}"
    if op is not None:
        return f"op {name!r} ({op.type}) makes no tensor, so it has no value to fetch; name a tensor"
    close = did_you_mean(name, candidates)
    hint = "did you mean " + " or ".join(f"`{c}`" for c in close) + "? " if close else ""
    return (
        f"unknown tensor {name!r}; {hint}(aliases: {', '.join(names.named)}; "
        "`hookrun inspect CONFIG` lists every tensor)"
    )
