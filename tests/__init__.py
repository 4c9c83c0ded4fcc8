"""hookrun's tests (a package: `tests.conftest` has one import name)."""
