"""``custom``: the user's own hook, as a class or as plain functions per method.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from hookrun.config_schemas.errors import SetupError
from hookrun.config_schemas.hooks import CustomHookConfig
from hookrun.config_schemas.hooks.custom import LIFECYCLE_METHODS
from hookrun.config_schemas.imports import import_object
from hookrun.config_schemas.interpolation import interpolate
from hookrun.hooks.context import HookConfigError, HookContext


class FunctionHook(tf.compat.v1.train.SessionRunHook):
    """A ``SessionRunHook`` made of plain functions; mirrors tfestimators' ``session_run_hook()``.

    Each function has the signature of the ``SessionRunHook`` method it
    stands for, without ``self``, and is called exactly when TensorFlow calls
    that method:

    - ``begin()``: once, before the graph is finalized;
    - ``after_create_session(session, coord)``: after each (re-)created session;
    - ``before_run(run_context) -> SessionRunArgs | None``: before every step;
    - ``after_run(run_context, run_values)``: after every successful step;
    - ``end(session)``: once, when training finishes without error.

    A method without a function is ``SessionRunHook``'s no-op. The functions
    are bound as instance attributes, so a call costs no wrapper.

    Args:
        begin, after_create_session, before_run, after_run, end: callables or None.
        name: shown by ``repr``.

    Raises:
        TypeError: a given function is not callable.

    Example:
        >>> def print_loss(run_context, run_values): print(run_values.results)
        >>> hook = FunctionHook(before_run=lambda ctx: tf.compat.v1.train.SessionRunArgs(loss),
        ...                     after_run=print_loss)
    """

    def __init__(
        self,
        begin: Callable[..., Any] | None = None,
        after_create_session: Callable[..., Any] | None = None,
        before_run: Callable[..., Any] | None = None,
        after_run: Callable[..., Any] | None = None,
        end: Callable[..., Any] | None = None,
        name: str = "functions",
    ) -> None:
        self.name = name
        given = {
            "begin": begin,
            "after_create_session": after_create_session,
            "before_run": before_run,
            "after_run": after_run,
            "end": end,
        }
        for method, function in given.items():
            if function is None:
                continue
            if not callable(function):
                raise TypeError(f"{method} must be callable, got {type(function).__name__}")
            setattr(self, method, function)

    def __repr__(self) -> str:
        return f"<FunctionHook {self.name}>"


def build(config: CustomHookConfig, ctx: HookContext) -> Any:
    """Build the user's hook.

    Class form: import ``class`` (a ``tf.compat.v1.train.SessionRunHook``
    subclass, beside the config file first) and call it with ``args``, their
    ``${run_dir}`` and ``${config_dir}`` replaced by the run directory and the
    config file's directory (see :mod:`hookrun.config_schemas.interpolation`).
    Function form: import each given lifecycle function and wrap them with
    :class:`FunctionHook`.

    Args:
        config: the ``custom`` entry.
        ctx: the runner's context.

    Returns:
        A ``SessionRunHook`` instance.

    Raises:
        SetupError: an import fails, the class is not a ``SessionRunHook``
            subclass, or its constructor rejects ``args``.
        HookConfigError: ``args`` hold an unknown ``${...}`` placeholder.
    """
    session_run_hook = tf.compat.v1.train.SessionRunHook
    if config.class_ is not None:
        where = f"{ctx.where}.class"
        cls = import_object(config.class_, ctx.base_dir, what=where)
        if not (isinstance(cls, type) and issubclass(cls, session_run_hook)):
            raise SetupError(f"{where}: {config.class_!r} is not a subclass of tf.compat.v1.train.SessionRunHook")
        try:
            args = interpolate(config.args, {"run_dir": str(ctx.run_dir), "config_dir": str(ctx.base_dir)})
        except ValueError as err:  # the checks before TensorFlow report it at the string's line first
            raise HookConfigError(f"args: {err}") from None
        try:
            return cls(**args)
        except TypeError as err:
            raise SetupError(f"{ctx.where}.args: {config.class_} rejected the arguments ({err})") from err
    functions = {
        method: import_object(getattr(config, method), ctx.base_dir, what=f"{ctx.where}.{method}")
        for method in LIFECYCLE_METHODS
        if getattr(config, method) is not None
    }
    return FunctionHook(**functions, name=config.display_name())
