"""Compare a resumed run's config with the one saved in its run directory."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import yaml

#: Parts of the config that shape the graph or its inputs: a change makes the checkpoint unusable.
SHAPE_KEYS: tuple[tuple[str, ...], ...] = (
    ("graph",),
    ("data", "label"),
    ("data", "features"),
    ("data", "categorical"),
    ("data", "standardize"),
    ("data", "label_scale"),
)

#: ``session:`` keys added by issue 28, with their defaults: a config.yaml written before them has none.
GPU_SWITCH_DEFAULTS: dict[str, object] = {
    "mixed_precision": False,
    "global_jit_level": "default",
    "allow_growth": False,
    "per_process_gpu_memory_fraction": 0.0,
}


@dataclass(frozen=True)
class ConfigChange:
    """What differs between the saved and the new resolved config.

    Attributes:
        shape_diff: unified diff of the graph/data-shape parts ('' when equal).
        other_keys: top-level (or ``data.x``) keys that changed but do not shape the graph.
    """

    shape_diff: str
    other_keys: list[str]


def _pick(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = config
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def compare_configs(saved_text: str, new_text: str) -> ConfigChange:
    """Compare two resolved configs (YAML text as written to ``config.yaml``).

    Args:
        saved_text: the run directory's ``config.yaml``.
        new_text: the resolved config of this run.

    Returns:
        The change: a unified diff of the shape-defining parts (:data:`SHAPE_KEYS`),
        and the names of other parts that changed (``hooks``, ``data.epochs``, ...).
    """
    saved = yaml.safe_load(saved_text) or {}
    new = yaml.safe_load(new_text) or {}
    for config in (saved, new):  # a config.yaml before issue 29 holds momentum under every optimizer
        optimizer = config.get("graph", {}).get("optimizer") if isinstance(config.get("graph"), dict) else None
        if isinstance(optimizer, dict) and optimizer.get("name", "adam") not in ("momentum", "rmsprop"):
            if optimizer.get("momentum") == 0.9:  # the default, unused: no longer written
                optimizer.pop("momentum")
    for config in (saved, new):  # a config.yaml before issue 28 lacks the GPU switches: at their defaults, alike
        session = config.get("session")
        if isinstance(session, dict):
            for key, default in GPU_SWITCH_DEFAULTS.items():
                if key in session and session[key] == default:
                    session.pop(key)
    # graph.warm_start only initialises a run without a checkpoint: a resume ignores it, so it shapes nothing.
    warm = [config.get("graph", {}).pop("warm_start", None) if isinstance(config.get("graph"), dict) else None
            for config in (saved, new)]
    shape_saved = {".".join(k): _pick(saved, k) for k in SHAPE_KEYS}
    shape_new = {".".join(k): _pick(new, k) for k in SHAPE_KEYS}
    diff = ""
    if shape_saved != shape_new:
        before = yaml.safe_dump(shape_saved, sort_keys=False).splitlines()
        after = yaml.safe_dump(shape_new, sort_keys=False).splitlines()
        diff = "\n".join(difflib.unified_diff(before, after, "saved config.yaml", "this config", lineterm=""))
    shape_names = {".".join(k) for k in SHAPE_KEYS}
    other: list[str] = []
    for key in sorted(set(saved) | set(new)):
        if key == "data":
            for sub in sorted(set(saved.get("data") or {}) | set(new.get("data") or {})):
                name = f"data.{sub}"
                if name not in shape_names and _pick(saved, ("data", sub)) != _pick(new, ("data", sub)):
                    other.append(name)
        elif key not in shape_names and saved.get(key) != new.get(key):
            other.append(key)
    if warm[0] != warm[1]:
        other.append("graph.warm_start")
    return ConfigChange(shape_diff=diff, other_keys=other)
