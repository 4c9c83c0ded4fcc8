"""Package discovery for the six source folders, which install as ``hookrun.<folder>``.

Everything else (name, version, dependencies, the ``hookrun`` script) is in ``pyproject.toml``. The
packages are found here rather than listed there so that a new hook folder (``hooks/<type>/``) or a new
``runner/`` concern folder is packaged without a second edit (``tests/test_packaging.py`` checks the wheel).
"""

from setuptools import find_packages, setup

#: Source folder -> its import name.
ROOTS = {
    "cli": "hookrun.cli",
    "common": "hookrun.common",
    "config_schemas": "hookrun.config_schemas",
    "estimator": "hookrun.estimator",
    "hooks": "hookrun.hooks",
    "runner": "hookrun.runner",
}

setup(
    package_dir=dict(zip(ROOTS.values(), ROOTS.keys(), strict=True)),
    packages=[
        name
        for folder, root in ROOTS.items()
        for name in [root, *(f"{root}.{sub}" for sub in find_packages(folder))]
    ],
)
