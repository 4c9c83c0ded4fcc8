"""``custom``: the user's own hook, as a class or as plain functions per method.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from hookrun.config_schemas.hook_base import LIFECYCLE_METHODS
from hookrun.config_schemas.imports import import_object
from hookrun.config_schemas.interpolation import interpolate
from hookrun.hooks.context import HookConfigError, HookContext, missing_methods
from hookrun.hooks.custom import CustomHookConfig
from hookrun.hooks.custom.window import WindowedHook


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


class LocatedHookError(HookConfigError):
    """A custom hook's entry is wrong at ``loc`` (the runner reports it at that key's file:line:column, exit 2).

    Attributes:
        loc: the place under the hook's entry to report it at, e.g. ``("args",)``.
    """

    def __init__(self, message: str, loc: tuple[str, ...]) -> None:
        super().__init__(message)
        self.loc = loc


class HookArgsError(LocatedHookError):
    """A custom hook's class rejected its ``args`` (any exception from its constructor); exit 2."""


class NotAHookError(LocatedHookError):
    """The class (or what it made) lacks ``SessionRunHook`` methods; exit 2, the missing ones named."""


def build(config: CustomHookConfig, ctx: HookContext) -> Any:
    """Build the user's hook.

    Class form: import ``class`` (beside the config file first) and call it
    with ``args``, their ``${run_dir}`` and ``${config_dir}`` replaced by the
    run directory and the config file's directory, and ``${steps_per_run}`` by
    ``session.steps_per_run`` (see
    :mod:`hookrun.config_schemas.interpolation`). It need not subclass
    ``tf.compat.v1.train.SessionRunHook``: as under ``MonitoredTrainingSession``,
    any object with the five lifecycle methods (``begin``,
    ``after_create_session``, ``before_run``, ``after_run``, ``end``) is a hook
    (duck typing). Function form: import each given lifecycle function and
    wrap them with :class:`FunctionHook`.

    Args:
        config: the ``custom`` entry.
        ctx: the runner's context.

    Returns:
        The hook; under ``session.steps_per_run`` > 1 wrapped in a
        :class:`hookrun.hooks.custom.window.WindowedHook`, which applies the rule of docs/engine.md
        ("What a hook's fetches and feeds give") to its fetches and feeds.

    Raises:
        SetupError: an import fails.
        NotAHookError: the class (or the object it makes) lacks lifecycle methods (the message
            names them); reported at ``hooks[i].class``, exit 2.
        HookArgsError: ``args`` hold an unknown ``${...}`` placeholder (reported at ``hooks[i].args``).
        HookArgsError: the constructor raised anything (the message gives the class, the
            exception type and its message); reported at ``hooks[i].args``, exit 2.
    """
    if config.class_ is not None:
        where = f"{ctx.where}.class"
        cls = import_object(config.class_, ctx.base_dir, what=where)
        missing = missing_methods(cls) if isinstance(cls, type) else []
        if missing:
            raise NotAHookError(_missing_message(config.class_, missing), ("class",))
        try:
            args = interpolate(
                config.args,
                {"run_dir": str(ctx.run_dir), "config_dir": str(ctx.base_dir), "steps_per_run": str(ctx.steps_per_run)},
            )
        except ValueError as err:  # the checks before TensorFlow report it at the string's line first
            raise HookArgsError(str(err), ("args",)) from None
        try:
            hook = cls(**args)
        except Exception as err:  # the user's constructor may raise anything: its arguments were rejected
            loc = ("args",) if config.args else ("class",)
            raise HookArgsError(
                f"{config.class_} rejected the arguments {config.args!r}: {type(err).__name__}: {err}", loc
            ) from err
        missing = missing_methods(hook)
        if missing:
            raise NotAHookError(_missing_message(config.class_, missing, made=type(hook).__name__), ("class",))
        return _windowed(hook, config, ctx)
    functions = {
        method: import_object(getattr(config, method), ctx.base_dir, what=f"{ctx.where}.{method}")
        for method in LIFECYCLE_METHODS
        if getattr(config, method) is not None
    }
    return _windowed(FunctionHook(**functions, name=config.display_name()), config, ctx)


def _windowed(hook: Any, config: CustomHookConfig, ctx: HookContext) -> Any:
    """``hook`` as is with one step per call; under ``session.steps_per_run`` > 1, in a :class:`WindowedHook`."""
    if ctx.window is None:
        return hook
    return WindowedHook(hook, ctx.window, f"{ctx.where} (custom {config.display_name()})")


def _missing_message(path: str, missing: list[str], made: str | None = None) -> str:
    what = f"{path!r} made a {made}, which" if made else f"{path!r}"
    return (
        f"{what} is not a SessionRunHook: it lacks {', '.join(missing)} "
        "(subclass tf.compat.v1.train.SessionRunHook, or define all of "
        + ", ".join(LIFECYCLE_METHODS)
        + ")"
    )
