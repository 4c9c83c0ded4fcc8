"""The format registry: every data file format, found from the format modules themselves. No TensorFlow.

A format is a module holding ``FORMAT``, an instance of
:class:`~hookrun.runner.data.formats.base.FileFormat`, found in two places (as ``hooks/registry.py``
finds hooks, one module each, no central list):

- every module of :mod:`hookrun.runner.data.formats` but ``base``, ``registry``, ``reading`` and names
  starting with ``_`` (``csv.py``, ``tfrecord.py``, ``jsonl.py``);
- every installed distribution's entry point in the group :data:`ENTRY_POINT_GROUP`
  (``hookrun.data_formats``), whose value is the module (``my_package.my_format``): a format shipped in
  its own package, with no edit to hookrun (``docs/architecture.md``, "How to add an input format").

What follows from the registry: which file endings ``data.train`` accepts, ``data.format``'s values,
the messages listing what hookrun reads, and which reader reads each file.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from importlib import metadata
from types import MappingProxyType
from typing import TYPE_CHECKING

from hookrun.common.errors import DataError, SetupError
from hookrun.common.suggest import did_you_mean
from hookrun.runner.data.formats.base import FileFormat

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

#: The entry-point group a plug-in format is declared in (``[project.entry-points."hookrun.data_formats"]``).
ENTRY_POINT_GROUP = "hookrun.data_formats"
#: Modules of the package that are not formats.
NOT_FORMATS = frozenset({"base", "registry", "reading"})


class FormatRegistryError(RuntimeError):
    """A format module is malformed (no ``FORMAT``, no name, a name or ending taken twice): a bug in that module."""


def _format_of_module(module_name: str) -> FileFormat:
    module = importlib.import_module(module_name)
    found = getattr(module, "FORMAT", None)
    if not isinstance(found, FileFormat):
        raise FormatRegistryError(f"{module_name}: a format module defines FORMAT, an instance of FileFormat")
    if not found.name or found.name != found.name.lower() or not found.extensions or not found.description:
        raise FormatRegistryError(f"{module_name}: FORMAT needs a lower-case name, extensions and a description")
    return found


@functools.cache
def builtin_formats() -> Mapping[str, FileFormat]:
    """The formats of the package's own modules, by ``rank`` then name (no plug-in: no entry-point scan).

    Raises:
        FormatRegistryError: a module is not a well-formed format, or two share a name or an ending.
    """
    return formats(plugins=False)


@functools.cache
def formats(plugins: bool = True) -> Mapping[str, FileFormat]:
    """Every format by name, by ``rank`` then name: the package's modules, and (``plugins``) the plug-ins'.

    The plug-ins are looked up (``importlib.metadata.entry_points``, ~50 ms) only when a built-in format does not
    answer: a file ending no built-in knows, a ``data.format`` no built-in has, a message listing every format.

    Raises:
        FormatRegistryError: a module of the package is not a well-formed format, or two share a name or an ending.
        SetupError: an installed plug-in's module does not import, is not a well-formed format, or takes a name
            or an ending another format has (exit 2, naming the entry point).
    """
    package = importlib.import_module(__package__)
    names = sorted(
        info.name for info in pkgutil.iter_modules(package.__path__)
        if info.name not in NOT_FORMATS and not info.name.startswith("_")
    )
    modules: list[tuple[str, str | None]] = [(f"{__package__}.{name}", None) for name in names]
    points = metadata.entry_points(group=ENTRY_POINT_GROUP) if plugins else []
    modules += [(point.value.split(":")[0], point.name) for point in sorted(points, key=lambda point: point.name)]
    found: dict[str, FileFormat] = {}
    endings: dict[str, str] = {}
    for module_name, plugin in modules:
        try:
            fmt = _format_of_module(module_name)
            if fmt.name in found:
                if type(found[fmt.name]) is type(fmt):
                    continue  # the same module declared twice (an editable install's two dist-infos)
                raise FormatRegistryError(f"{module_name}: the format name {fmt.name!r} is taken")
            for ending in fmt.extensions:
                if ending in endings:
                    raise FormatRegistryError(f"{module_name}: the ending {ending!r} is {endings[ending]}'s")
                endings[ending] = fmt.name
        except Exception as err:
            if plugin is None:
                raise  # a built-in format module: a bug in hookrun
            # an installed package's format: one line, exit 2, naming the entry point and the fix
            raise SetupError(
                f"the data format plug-in {plugin!r} ({ENTRY_POINT_GROUP} entry point {module_name}) cannot be "
                f"used: {type(err).__name__}: {err}; fix or uninstall its package"
            ) from None
        found[fmt.name] = fmt
    return MappingProxyType(dict(sorted(found.items(), key=lambda item: (item[1].rank, item[0]))))


def accepted() -> str:
    """What the messages list as accepted: ``"CSV (.csv, .csv.gz) or TFRecord ... or JSON lines (...)"``."""
    descriptions = [fmt.description for fmt in formats().values()]
    return ", ".join(descriptions[:-1]) + " or " + descriptions[-1] if len(descriptions) > 1 else descriptions[0]


def format_named(name: str, loc: tuple[str | int, ...] = ("data", "format")) -> FileFormat:
    """The format called ``name`` (``data.format``, a :attr:`DataFile.format`).

    Raises:
        DataError: no such format (at ``loc``), listing the known ones, with a "did you mean".
    """
    if name in builtin_formats():
        return builtin_formats()[name]
    known = formats()
    if name not in known:
        raise DataError(
            f"`data.format` is {name!r}, not a format hookrun reads ({', '.join(known)})"
            f"{did_you_mean(name, list(known), quote='`')}",
            loc=loc,
        )
    return known[name]


def format_of(path: Path, configured: str | None) -> tuple[str, bool] | None:
    """``(format name, gzip)`` of a file from ``data.format`` or its name's ending; None when neither tells.

    Raises:
        DataError: ``configured`` is not a known format.
    """
    name = path.name.lower()
    gz = name.endswith(".gz")
    if configured is not None:
        return format_named(configured).name, gz
    for known in (builtin_formats(), formats()):  # the plug-ins only for an ending no built-in knows
        for fmt in known.values():
            if any(name.endswith(ending) for ending in fmt.extensions):
                return fmt.name, gz
    return None
