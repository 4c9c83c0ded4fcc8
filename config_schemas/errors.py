"""Error base classes shared by every layer, each with its documented exit code.

Exit codes: 0 success; 1 training failed; 2 invalid config, data or usage.
"""

from __future__ import annotations


class HookrunError(Exception):
    """Base of hookrun's own errors: a one-line message and an exit code."""

    exit_code: int = 1


class SetupError(HookrunError):
    """The config cannot run as written (bad CSV, unknown tensor, missing GPU, bad import). Exit code 2."""

    exit_code = 2
