"""hookrun.cli (see docs/architecture.md)."""

# One import name per module: `import cli` from the repository root would load a second copy.
if __name__ != "hookrun.cli":
    raise ImportError(f"import hookrun.cli, not {__name__}: the folder cli/ installs as hookrun.cli")
