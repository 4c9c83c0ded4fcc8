"""hookrun.hooks (see docs/architecture.md)."""

# One import name per module: `import hooks` from the repository root would load a second copy.
if __name__ != "hookrun.hooks":
    raise ImportError(f"import hookrun.hooks, not {__name__}: the folder hooks/ installs as hookrun.hooks")
