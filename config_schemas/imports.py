"""Resolve ``package.module:attr`` import paths named in a config (builders, custom hooks). No TensorFlow.

Two steps, as the CLI uses them:

- :func:`find_module`, for ``validate`` (no ``--build``) and the checks before ``train``: is the
  module there? It is located the way ``import`` would locate it (the config's directory first, then
  ``sys.path``, through ``sys.meta_path``'s finders, so editable installs count) WITHOUT executing
  it or its parent packages: each parent's spec gives the ``submodule_search_locations`` in which
  the next name is looked up. Only when that static search misses below a top-level name that
  does exist is the answer confirmed with ``importlib.util.find_spec``, which imports the parents
  (a package may extend its ``__path__`` when it runs, a module register submodules as ``os`` does
  ``os.path``); so a parent is executed only for a config that is about to be rejected. The
  attribute after ``:`` is not checked: that needs the module to run (``validate --build`` and
  ``train`` import it).
- :func:`import_object`, when the graph is built: the import itself.

Both raise or report :class:`ImportFailure`, which knows the config place (``hooks[2].class``) so
the message carries the config's ``file:line:column``.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError
from hookrun.common.suggest import did_you_mean

#: ``package.module:attribute``, the form of every import path a config names.
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def check_import_path(value: str | None) -> str | None:
    """Check the ``package.module:attribute`` form of an import path.

    Args:
        value: the path, or None.

    Returns:
        The path unchanged.

    Raises:
        ValueError: when the string is not of the form ``module:attr``.
    """
    if value is not None and not IMPORT_PATH.match(value):
        raise ValueError(f"{value!r} is not an import path of the form `package.module:name`")
    return value



class ImportFailure(PlacedError):
    """A ``module:name`` of the config cannot be found or imported (exit 2), with its config place."""


@contextlib.contextmanager
def _beside(base_dir: Path) -> Iterator[None]:
    """``base_dir`` at the front of ``sys.path`` for the duration (unless it is on it already)."""
    base = str(base_dir)
    added = base not in sys.path
    if added:
        sys.path.insert(0, base)
    try:
        yield
    finally:
        if added:
            sys.path.remove(base)


def _static_spec(name: str, path: Any) -> Any:
    """Ask each ``sys.meta_path`` finder for ``name`` in ``path``, as ``import`` does; executes nothing."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        spec = find_spec(name, path)
        if spec is not None:
            return spec
    return None


def find_module(module_name: str, base_dir: Path) -> str | None:
    """Whether ``module_name`` can be imported, found without running it (see the module docstring).

    Args:
        module_name: a dotted module name, ``package.module``.
        base_dir: the config file's directory, searched first.

    Returns:
        None when the module is found; else why not, one sentence with the fix (a did-you-mean among
        the modules beside the config, or in the parent package).
    """
    parts = module_name.split(".")
    if module_name in sys.modules:
        return None
    with _beside(base_dir):
        importlib.invalidate_caches()  # a module written a moment ago must be seen
        depth, reason = _static_search(parts, base_dir)
        if reason is not None and depth > 1:
            # Missed below a top-level name that exists. A package may build its __path__ (or a module
            # register submodules, as `os` does `os.path`) when it runs: confirm by importing the parents.
            try:
                if importlib.util.find_spec(module_name) is not None:
                    return None
            except ModuleNotFoundError:
                pass
            except Exception as err:  # the parent package's own code may raise anything
                return f"cannot import a parent package of {module_name!r} ({type(err).__name__}: {err})"
        return reason


def _static_search(parts: list[str], base_dir: Path) -> tuple[int, str | None]:
    """Locate ``parts`` level by level through each parent's spec.

    Returns:
        ``(depth, None)`` when found; else ``(depth, why)``, ``depth`` the number of parts up to the
        one that failed (1: the top-level name).
    """
    path: Any = None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None) if loaded is not None else None
        if spec is None:
            try:
                spec = _static_spec(name, path)
            except (ImportError, ValueError, OSError):
                spec = None
        if spec is None:
            return depth, _not_found(parts, depth, path, base_dir)
        path = getattr(loaded, "__path__", None) if loaded is not None else None
        if path is None:
            path = spec.submodule_search_locations
        if path is None and depth < len(parts):
            return depth + 1, f"{name!r} is a module, not a package: it has no submodule {parts[depth]!r}"
    return len(parts), None


def _not_found(parts: list[str], depth: int, path: Any, base_dir: Path) -> str:
    """The reason a module was not found, with a did-you-mean among its would-be siblings."""
    missing = parts[depth - 1]
    if depth == 1:
        siblings = [m.name for m in pkgutil.iter_modules([str(base_dir)])]
        where = f"beside the config file ({base_dir}) or on sys.path"
    else:
        siblings = [m.name for m in pkgutil.iter_modules(list(path or []))]
        where = f"in package {'.'.join(parts[: depth - 1])!r}"
    hint = did_you_mean(missing, siblings) or "; check the name, or install the package"
    return f"cannot find module {'.'.join(parts[:depth])!r} {where}{hint}"


#: Calls that start a training program when a module runs them at import time: a bare ``main()``, an app
#: runner (``app.run(main)``, ``tf.compat.v1.app.run()``, ``absl.app.run``) and training methods
#: (``estimator.train(...)``, ``tf.estimator.train_and_evaluate(...)``, ``model.fit(...)``).
_ENTRY_NAMES = frozenset({"main"})
_ENTRY_METHODS = frozenset({"train", "train_and_evaluate", "fit"})


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either side)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in sides) and any(
        isinstance(n, ast.Constant) and n.value == "__main__" for n in sides
    )


def _entry_call(node: ast.AST) -> str | None:
    """The source of ``node`` when it is a call that starts a program (:data:`_ENTRY_NAMES`, ...), else None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "exit" and node.args:  # sys.exit(main())
        return ast.unparse(node) if _entry_call(node.args[0]) is not None else None
    if isinstance(func, ast.Name) and func.id in _ENTRY_NAMES:
        return ast.unparse(node)
    if isinstance(func, ast.Attribute):
        owner = func.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if func.attr in _ENTRY_METHODS or (func.attr == "run" and owner_name == "app"):
            return ast.unparse(node)
    return None


def import_time_calls(source: str) -> list[tuple[int, str]]:
    """The calls a module makes at import time that would start a training program.

    Statements at module level (and inside module-level ``if``/``try``/``with`` blocks, but not under
    ``if __name__ == "__main__":``) whose value is a call to ``main()`` (or ``sys.exit(main())``), an app
    runner's ``run`` (``app.run(main)``, ``tf.compat.v1.app.run()``) or a training method (``.train(...)``,
    ``.train_and_evaluate(...)``, ``.fit(...)``). Reads the source only; runs nothing.

    Args:
        source: the module's Python source.

    Returns:
        ``(line, call source)`` per call found, in order; empty when the module is safe to import (or does
        not parse: the import itself then reports the syntax error).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[int, str]] = []

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.If):
                if not _is_main_guard(statement.test):
                    visit(statement.body)
                    visit(statement.orelse)
            elif isinstance(statement, ast.Try):
                for block in (statement.body, statement.orelse, statement.finalbody):
                    visit(block)
                for handler in statement.handlers:
                    visit(handler.body)
            elif isinstance(statement, ast.With):
                visit(statement.body)
            elif isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) and statement.value is not None:
                call = _entry_call(statement.value)
                if call is not None:
                    found.append((statement.lineno, call))

    visit(tree.body)
    return found


def _module_file(module_name: str, base_dir: Path) -> Path | None:
    """The ``.py`` file ``module_name`` would load from (beside the config first), found without running it."""
    path: Any = None
    spec = None
    with _beside(base_dir):
        importlib.invalidate_caches()
        for depth in range(1, len(module_name.split(".")) + 1):
            name = ".".join(module_name.split(".")[:depth])
            loaded = sys.modules.get(name)
            spec = getattr(loaded, "__spec__", None) if loaded is not None else None
            if spec is None:
                try:
                    spec = _static_spec(name, path)
                except (ImportError, ValueError, OSError):
                    return None
            if spec is None:
                return None
            path = spec.submodule_search_locations
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and origin.endswith(".py") else None


def flags_hint(err: BaseException) -> str:
    """The fix for absl's ``UnparsedFlagAccessError`` (``FLAGS.x`` read before ``app.run`` parsed them), else ``""``.

    hookrun imports the user's module and calls its function; it never runs the program's ``main`` or
    ``app.run``, so its absl flags are never parsed and reading one raises.
    """
    if type(err).__name__ != "UnparsedFlagAccessError":
        return ""
    return (
        "; hookrun never runs your program's app.run/main, so absl FLAGS are not parsed: give the values in "
        "graph.params and read params['name'] in the model_fn instead of FLAGS.name"
    )


def check_import_safe(module_name: str, base_dir: Path, what: str) -> None:
    """Refuse to import a module that would start a training program at import time.

    A TF 1.x Estimator program often ends with ``tf.compat.v1.app.run(main)`` or ``main()`` at module
    level; hookrun imports the module to find its ``model_fn``, which would run the old program (a surprise
    training run, or a traceback about unparsed flags). Modules already imported are not checked.

    Args:
        module_name: the dotted module name of a ``module:attr`` path.
        base_dir: the config file's directory (searched first, as :func:`import_object` does).
        what: the config key, for the message (``graph.builder``).

    Raises:
        ImportFailure: the module's source calls :func:`import_time_calls`' entry points outside
            ``if __name__ == "__main__":``; the message names the file, the line, the call and the fix.
    """
    if module_name in sys.modules:
        return
    file = _module_file(module_name, base_dir)
    if file is None:
        return
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    calls = import_time_calls(source)
    if calls:
        line, call = calls[0]
        raise ImportFailure(
            what,
            f"{file}:{line}: importing module {module_name!r} would run `{call}` (a program's entry point at "
            "module level): hookrun imports the module and calls the function itself; put the script's own "
            'entry point under `if __name__ == "__main__":` so importing it only defines functions',
        )


#: The module of ``hookrun.runner.live``'s paths: in-memory objects of a ``hookrun.estimator`` process.
LIVE_MODULE = "hookrun.runner.live"


def live_object_message(path: str) -> str:
    """Why a ``hookrun.runner.live:...`` path of a saved config does not import, and what to write instead.

    ``hookrun.estimator`` names a lambda, a closure, a ``__main__`` function or ``params`` YAML cannot
    write by such a path (``docs/estimator-api.md``); only the training process could import it.
    """
    return (
        f"{path!r} was an in-memory Python object of the process that trained with hookrun.estimator (a lambda, a "
        "closure, a function of __main__, or params YAML cannot write), which no other process can import: define "
        "the function at a module's top level and write it as module:function in the run directory's config.yaml "
        "(its params under graph.params), or train with it so named"
    )


def import_object(path: str, base_dir: Path, what: str, callable_required: bool = True) -> Any:
    """Import ``package.module:attr`` (``attr`` may be dotted), beside the config file first.

    The config's directory is put at the front of ``sys.path`` for the
    import, so a config and its ``my_hooks.py`` can sit side by side; then
    the normal ``sys.path`` applies.

    Args:
        path: ``package.module:attr``.
        base_dir: the config file's directory.
        what: the config key, for messages (e.g. ``hooks[3].class``).
        callable_required: raise unless the object is callable.

    Returns:
        The object.

    Raises:
        ImportFailure: malformed path, the module would run a program at import time
            (:func:`check_import_safe`), it fails to import (the reason is given), the attribute is
            missing, or it is not callable; it carries the config place ``what``.
    """
    module_name, sep, attr_path = path.partition(":")
    if not sep or not module_name or not attr_path:
        raise ImportFailure(what, f"{path!r} is not of the form `package.module:name`")
    check_import_safe(module_name, base_dir, what)
    with _beside(base_dir):
        try:
            module = importlib.import_module(module_name)
        except Exception as err:  # the user's module may raise anything at import
            reason = f"{type(err).__name__}: {err}"
            raise ImportFailure(what, f"cannot import module {module_name!r} ({reason}){flags_hint(err)}") from err
    obj: Any = module
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if module_name == LIVE_MODULE:
                raise ImportFailure(what, live_object_message(path)) from None
            public = [n for n in dir(obj) if not n.startswith("_")]
            hint = did_you_mean(part, public)
            raise ImportFailure(what, f"module {module_name!r} has no attribute {attr_path!r}{hint}") from None
    if callable_required and not callable(obj):
        raise ImportFailure(what, f"{path!r} is a {type(obj).__name__}, not callable")
    return obj
