"""The hook registry, found from the hooks themselves: every hook is one folder of ``hooks/``.

A hook ``<type>`` is the package ``hookrun.hooks.<type>``:

- ``hooks/<type>/__init__.py``: its config model, a ``HookConfig`` subclass whose ``type`` literal is
  ``<type>`` (pydantic only, no TensorFlow: ``validate`` and ``list-hooks`` import it);
- ``hooks/<type>/hook.py``: ``build(config, ctx) -> SessionRunHook``, imported only when a hook of
  that type is built (it may import TensorFlow at the top).

Everything else derives from what is found here: the ``hooks:`` union and the whole config model
(:func:`run_config_model`), ``list-hooks``, the JSON Schema and ``docs/hooks.md``. Plain modules of
``hooks/`` (``context.py``, ``files.py``, ``step_clock.py``, this one) are shared code, not hooks.
Adding a hook is adding a folder (and its test): see ``docs/architecture.md``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import typing
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from hookrun.config_schemas.hook_base import HookConfig
from hookrun.hooks.context import HookContext

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hookrun.config_schemas.run_config import RunConfigBase

#: The name of a hook's implementation module inside its folder.
IMPLEMENTATION = "hook"


class RegistryError(RuntimeError):
    """A folder of ``hooks/`` is not a well-formed hook (a bug in hookrun, not in a config)."""


def hook_type_of(model: type[HookConfig]) -> str:
    """The ``type`` literal of a hook config model (``"stop_at_step"``).

    Raises:
        RegistryError: the model has no ``type: Literal["..."]`` field.
    """
    field = model.model_fields.get("type")
    args = typing.get_args(field.annotation) if field is not None else ()
    if len(args) != 1 or not isinstance(args[0], str):
        raise RegistryError(f"{model.__module__}.{model.__qualname__}: a hook config needs `type: Literal[\"<type>\"]`")
    return args[0]


def _config_model(package: str, name: str) -> type[HookConfig]:
    """The one ``HookConfig`` subclass defined in ``package`` with ``type`` ``name``."""
    module = importlib.import_module(package)
    models = [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, HookConfig) and value.__module__ == package
    ]
    if len(models) != 1:
        raise RegistryError(f"{package}: a hook folder defines exactly one HookConfig subclass, found {len(models)}")
    model = models[0]
    if hook_type_of(model) != name:
        raise RegistryError(
            f"{package}: the config's type is {hook_type_of(model)!r}; it must be the folder's name {name!r}"
        )
    if importlib.util.find_spec(f"{package}.{IMPLEMENTATION}") is None:
        raise RegistryError(f"{package}: no {IMPLEMENTATION}.py with build(config, ctx)")
    return model


@functools.cache
def hook_configs() -> Mapping[str, type[HookConfig]]:
    """Every hook type and its config model: the folders of ``hooks/``, by ``catalogue_rank``, then name.

    Imports each hook's ``__init__`` (its config model), never its ``hook.py``: no TensorFlow.

    Returns:
        Hook type -> config model, in catalogue order.

    Raises:
        RegistryError: a folder is not a well-formed hook.
    """
    import hookrun.hooks as package

    names = [info.name for info in pkgutil.iter_modules(package.__path__) if info.ispkg]
    models = {name: _config_model(f"{package.__name__}.{name}", name) for name in names}
    ordered = sorted(models, key=lambda name: (models[name].catalogue_rank, name))
    return MappingProxyType({name: models[name] for name in ordered})


@functools.cache
def run_config_model_with_hooks() -> type[RunConfigBase]:
    """The ``RunConfig`` model: every config part, with ``hooks:`` a union of the registered hook types."""
    from hookrun.config_schemas.run_config import run_config_model  # not needed by list-hooks

    return run_config_model(list(hook_configs().values()))


def build_hook(config: HookConfig, ctx: HookContext) -> Any:
    """Build the ``tf.compat.v1.train.SessionRunHook`` for one ``hooks:`` entry.

    Imports ``hookrun.hooks.<type>.hook`` (TensorFlow with it) and calls its ``build(config, ctx)``.

    Args:
        config: the validated hook config.
        ctx: the runner's context.

    Returns:
        A ``SessionRunHook`` instance.

    Raises:
        UnknownTensorError: the hook names an unknown tensor.
        HookConfigError: the hook's settings do not fit the graph (e.g. ``evaluation`` without validation data).
        SetupError: a custom hook does not import.
    """
    module = importlib.import_module(f"{__package__}.{hook_type_of(type(config))}.{IMPLEMENTATION}")
    return module.build(config, ctx)
