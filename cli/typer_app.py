"""The ``hookrun`` command: a typer app. Thin: parse, call, render.

The console script runs it through :func:`hookrun.cli.app.main`, which installs the signal handlers first.

To add a command: write ``cli/commands/<name>.py`` with a ``<name>_command``
function and register it below. Command modules import their heavy
dependencies (pydantic models, numpy, TensorFlow) inside the function, so
``--help`` loads none of them; ``train`` imports TensorFlow when it runs.
"""

from __future__ import annotations

import typer

from hookrun.cli.commands.inspect import inspect_command
from hookrun.cli.commands.list_hooks import list_hooks_command
from hookrun.cli.commands.schema import schema_command
from hookrun.cli.commands.train import train_command
from hookrun.cli.commands.validate import validate_command
from hookrun.cli.exit_codes import EXIT_CODES_HELP

app = typer.Typer(
    name="hookrun",
    help="Train TensorFlow graph-mode models from YAML, with an ordered list of SessionRunHooks.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("train", epilog=EXIT_CODES_HELP)(train_command)
app.command("validate", epilog=EXIT_CODES_HELP)(validate_command)
app.command("inspect", epilog=EXIT_CODES_HELP)(inspect_command)
app.command("list-hooks")(list_hooks_command)
app.command("schema")(schema_command)

