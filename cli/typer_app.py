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


#: ``ctx.meta`` key: ``--devices`` was given (read by ``--version``'s callback, which runs after it).
_DEVICES = "hookrun.devices"


def _devices(ctx: typer.Context, value: bool) -> None:
    """``--devices``: remember it for ``--version`` (eager, so it is seen first whatever the order)."""
    if value:
        ctx.meta[_DEVICES] = True


def _version(ctx: typer.Context, value: bool) -> None:
    """Print hookrun's version and the TensorFlow build (``--devices``: and its devices), then exit 0.

    Without ``--devices`` no TensorFlow is imported: the versions come from package metadata and the
    build (CUDA or CPU-only, CUDA and cuDNN versions) from TensorFlow's ``build_info.py``, read as a file.
    ``--devices`` imports TensorFlow (2-4 s) to list the devices it finds.
    """
    devices = bool(ctx.meta.get(_DEVICES))
    if not (value or devices):
        return
    from importlib.metadata import PackageNotFoundError, version

    from hookrun.runner.graph.device import describe_install, installed_tensorflow

    try:
        typer.echo(f"hookrun {version('hookrun')}")
    except PackageNotFoundError:  # run from a source tree that was never installed
        typer.echo("hookrun (not installed: no package metadata)")
    install = installed_tensorflow()
    for line in describe_install(install):
        typer.echo(line)
    if not devices:
        typer.echo("devices: not listed (hookrun --version --devices imports TensorFlow to list them)")
    elif not install.packages:
        typer.echo("devices: not listed (no TensorFlow installed)")
    else:
        from hookrun.common.errors import SetupError
        from hookrun.runner.graph.device import describe_devices
        from hookrun.runner.tf_env import import_tensorflow

        try:
            tf = import_tensorflow()
        except (ImportError, SetupError) as error:  # a broken install, no temporary directory: one line, exit 2
            typer.echo(f"error: TensorFlow does not import: {error}", err=True)
            raise typer.Exit(2) from None
        typer.echo(describe_devices(tf))
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
    devices: Annotated[
        bool,
        typer.Option(
            "--devices",
            help="With --version: also list the devices TensorFlow finds (imports TensorFlow, 2-4 s).",
            is_eager=True,
            callback=_devices,
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print hookrun's version and the TensorFlow build (CUDA or CPU-only; CUDA and cuDNN versions), "
            "without importing TensorFlow, and exit.",
            callback=_version,
        ),
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
