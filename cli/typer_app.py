"""The ``hookrun`` command: a typer app. Thin: parse, call, render.

The console script runs it through :func:`hookrun.cli.app.main`, which installs the signal handlers first.

To add a command: write ``cli/commands/<name>.py`` with a ``<name>_command``
function and register it below. Command modules import their heavy
dependencies (pydantic models, numpy, TensorFlow) inside the function, so
``--help`` loads none of them; ``train`` imports TensorFlow when it runs.
"""

from __future__ import annotations

import inspect
import re
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from hookrun.cli.commands.evaluate import evaluate_command
from hookrun.cli.commands.export import export_command
from hookrun.cli.commands.inspect import inspect_command
from hookrun.cli.commands.list_hooks import list_hooks_command
from hookrun.cli.commands.predict import predict_command
from hookrun.cli.commands.runs import runs_command
from hookrun.cli.commands.schema import schema_command
from hookrun.cli.commands.train import train_command
from hookrun.cli.commands.validate import validate_command
from hookrun.cli.exit_codes import EXIT_CODES_HELP


def _plain(text: str) -> str:
    """``text`` with every ``[`` that rich would read as the start of a markup tag escaped (``[batch]`` stays).

    typer renders help texts as rich markup: an unescaped ``[batch]`` is taken for a style and vanishes.
    """
    return re.sub(r"(?<!\\)\[(?=[A-Za-z#/@])", r"\\[", text)


def _reflow(text: str | None) -> str | None:
    """``text`` with each paragraph on one line (typer's rich mode keeps a docstring's single line breaks), as text.

    Square brackets are kept as written (:func:`_plain`), not read as rich markup.
    """
    if not text:
        return text
    return _plain("\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n")))


def _plain_flags(command: Any, params: list[Any]) -> list[Any]:
    """``params`` with an empty metavar on every on/off flag (typer 0.29 shows ``<bool>`` for them)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if getattr(param, "help", None) and not getattr(param, "_hookrun_plain", False):
            param.help = _plain(param.help)
            param._hookrun_plain = True  # get_params runs for every --help: escape once
    return params


class HookrunCommand(TyperCommand):
    """A typer command whose help reads well: paragraphs reflowed to the terminal, no ``<bool>`` on flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _reflow(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        """The command's parameters (with ``--help``), flags without a type placeholder."""
        return _plain_flags(self, super().get_params(ctx))


class HookrunGroup(TyperGroup):
    """The top-level group: as :class:`HookrunCommand`, for ``hookrun --help``."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The group's parameters (``--version``, ``--help``), flags without a type placeholder."""
        return _plain_flags(self, super().get_params(ctx))


def _version(value: bool) -> None:
    """Print ``hookrun <version>`` (from the installed package's metadata, no TensorFlow) and exit 0."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"hookrun {version('hookrun')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            typer.echo("hookrun (not installed: no package metadata)")
        raise typer.Exit(0)


app = typer.Typer(
    name="hookrun",
    help="Train TensorFlow graph-mode models from YAML, with an ordered list of SessionRunHooks.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (typer; no TensorFlow loads)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=HookrunGroup,
)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print hookrun's version and exit.", is_eager=True, callback=_version),
    ] = False,
) -> None:
    """Train TensorFlow graph-mode models from YAML, with an ordered list of SessionRunHooks."""


app.command("train", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(train_command)
app.command("validate", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(validate_command)
app.command("inspect", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(inspect_command)
app.command("evaluate", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(evaluate_command)
app.command("runs", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(runs_command)
app.command("predict", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(predict_command)
app.command("export", epilog=EXIT_CODES_HELP, cls=HookrunCommand)(export_command)
app.command("list-hooks", cls=HookrunCommand)(list_hooks_command)
app.command("schema", cls=HookrunCommand)(schema_command)
