"""``hookrun train CONFIG --sweep PATH=V1,V2,...``: one run per combination of values, one after another (issue 15).

The syntax is Hydra's ``--multirun`` sweep, ``key=v1,v2,v3`` (each value read as YAML 1.2, as
``--set``); several ``--sweep`` make their cartesian product, in the order given (the last varies
fastest). Each combination is a run directory under the base run directory, named after its values
(``learning_rate=0.001,batch_size=64``), whose ``config.yaml`` holds the values and whose
``summary.json`` lists them among its ``overrides``. Every combination is loaded and checked
before the first run starts; then the runs go one at a time, and ``hookrun runs`` compares them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import HookrunError, SetupError
from hookrun.config_schemas.loader import ConfigError, ConfigIssue, LoadedConfig
from hookrun.config_schemas.yaml_source import OVERRIDE_FILE

#: Longest run-directory name made from the values (characters); longer ones end in a hash.
MAX_NAME = 120
#: Most combinations one sweep may make (runs).
MAX_RUNS = 10_000

_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]+")


@dataclass(frozen=True)
class SweepAxis:
    """One ``--sweep PATH=V1,V2``: the config path and the values' YAML texts, in order."""

    path: str
    values: tuple[str, ...]


def split_values(text: str) -> list[str]:
    """Split ``V1,V2,...`` at the commas outside brackets, braces and quotes (``[64,32],[128]`` is two values)."""
    values, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            values.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    values.append("".join(current).strip())
    return values


#: Where a sweep's issues are reported (as ``--set`` for an override).
SWEEP_FILE = "--sweep"


def _issue(text: str, message: str) -> ConfigError:
    return ConfigError([ConfigIssue(SWEEP_FILE, None, None, "", f"`{text}`: {message}")])


def parse_sweep(texts: Sequence[str]) -> list[SweepAxis]:
    """Parse ``--sweep`` options.

    Args:
        texts: ``PATH=V1,V2,...`` strings.

    Returns:
        One axis per option.

    Raises:
        ConfigError: no ``=``, an empty path or value, a value given twice, or a path swept twice (exit 2).
    """
    axes: list[SweepAxis] = []
    for text in texts:
        path, sep, raw = text.partition("=")
        path = path.strip()
        if not sep or not path:
            raise _issue(text, "a sweep needs the form PATH=V1,V2,..., e.g. `graph.optimizer.learning_rate=0.001,0.01`")
        values = split_values(raw)
        if any(v == "" for v in values):
            raise _issue(text, "an empty value; separate the values with single commas, e.g. `0.001,0.01`")
        if len(set(values)) != len(values):
            raise _issue(text, "a value is given twice; give each once")
        if any(axis.path == path for axis in axes):
            raise _issue(text, f"`{path}` is swept twice; give all its values in one --sweep")
        axes.append(SweepAxis(path, tuple(values)))
    return axes


def run_name(axes: Sequence[SweepAxis], values: Sequence[str]) -> str:
    """The run directory's name for one combination: ``learning_rate=0.001,batch_size=64``, file-name safe.

    Each path is shortened to its last key unless two axes share it; characters other than letters,
    digits and ``. _ = , + -`` become ``_``; a name longer than :data:`MAX_NAME` is cut and ends
    in a hash of the whole, so names stay distinct.
    """
    lasts = [axis.path.split(".")[-1] for axis in axes]
    keys = [last if lasts.count(last) == 1 else axis.path for last, axis in zip(lasts, axes, strict=True)]
    name = _UNSAFE.sub("_", ",".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))).strip("._") or "run"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = f"{name[: MAX_NAME - 11]}-{digest}"
    return name


@dataclass
class SweepRun:
    """One combination of a sweep.

    Attributes:
        name: its run directory's name.
        run_dir: its run directory (absolute).
        overrides: its ``--sweep`` values as ``--set`` texts (``graph.optimizer.learning_rate=0.01``).
        loaded: its config, with the ``--set`` and these overrides applied and checked.
        status: ``pending``, then ``finished``, ``interrupted`` or ``failed``.
        error: why it failed, or None.
    """

    name: str
    run_dir: Path
    overrides: list[str]
    loaded: LoadedConfig
    status: str = "pending"
    error: str | None = None


@dataclass
class SweepResult:
    """The outcome of a sweep.

    Attributes:
        base_dir: the directory holding its run directories.
        runs: every combination, in order (``pending`` ones were not started: the sweep was stopped).
        signal: the signal that stopped the sweep, or None.
    """

    base_dir: Path
    runs: list[SweepRun] = field(default_factory=list)
    signal: int | None = None

    @property
    def failed(self) -> list[SweepRun]:
        """The runs that failed."""
        return [run for run in self.runs if run.status == "failed"]


def plan_sweep(
    config: str | Path,
    sweeps: Sequence[str],
    overrides: Sequence[str] = (),
    run_dir: Path | None = None,
    configs: Sequence[str | Path] = (),
) -> tuple[Path, list[SweepRun], list[ConfigIssue]]:
    """Load and check every combination (no TensorFlow, nothing written).

    Args:
        config: the config file.
        sweeps: ``--sweep PATH=V1,V2`` texts.
        overrides: ``--set`` texts, applied before each combination's values.
        run_dir: the base run directory (``--run-dir``); default the config's (``session.run_dir``
            or ``runs/<name>``; ``runs/<name>-sweep`` when ``runs/<name>`` is a run directory already).
            Each combination's run directory is ``<base>/<run_name>``.
        configs: ``--config`` files merged over ``config`` in order, in every combination.

    Returns:
        ``(base run directory, the runs, warnings of the checks)``.

    Raises:
        ConfigError: a malformed ``--sweep``, a path both in ``overrides`` and swept, or combinations whose
            config does not check (every issue of every failing combination, each once; exit 2).
        SetupError: too many combinations, or the base is a run directory ``--run-dir`` or
            ``session.run_dir`` names (exit 2).
    """
    from hookrun.runner.config import load_checked
    from hookrun.runner.training.lifecycle import run_dir_for

    axes = parse_sweep(sweeps)
    if not axes:
        raise SetupError("--sweep: give at least one PATH=V1,V2,...")
    swept = {axis.path for axis in axes}
    for text in overrides:
        path = text.partition("=")[0].strip()
        if path in swept:  # the sweep's value would silently win over it
            raise _issue(text, f"`{path}` is both set (--set) and swept (--sweep); give it once")
    count = 1
    for axis in axes:
        count *= len(axis.values)
    if count > MAX_RUNS:
        raise SetupError(f"--sweep makes {count:,} runs, more than {MAX_RUNS:,}; sweep fewer values")
    first, _ = load_checked(config, list(overrides), configs=configs)  # the config itself first: its own errors once
    base = run_dir_for(first, run_dir)
    if base.exists() and not base.is_dir():
        raise SetupError(f"{base}: the sweep's run directory is a file; choose another --run-dir")
    base = _not_inside_a_run(base, default=run_dir is None and first.config.session.run_dir is None)
    runs: list[SweepRun] = []
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = []
    names: set[str] = set()
    for values in itertools.product(*(axis.values for axis in axes)):
        name = given = run_name(axes, values)
        suffix = len(runs)
        while name in names:  # another value made the same name (a character made `_`, or an earlier suffix)
            name, suffix = f"{given}-{suffix}", suffix + 1
        names.add(name)
        sets = [f"{axis.path}={value}" for axis, value in zip(axes, values, strict=True)]
        directory = (base / name).absolute()
        try:
            loaded, found = load_checked(config, [*overrides, *sets], directory, configs=configs)
        except ConfigError as err:
            for issue in err.issues:  # a value of this sweep is reported against --sweep, not --set
                if issue.file == OVERRIDE_FILE and any(issue.message.startswith(f"`{t}`") for t in sets):
                    issue = dataclasses.replace(issue, file=SWEEP_FILE)
                if issue not in issues:
                    issues.append(issue)
            continue
        warnings.extend(w for w in found if w not in warnings)
        runs.append(SweepRun(name=name, run_dir=directory, overrides=sets, loaded=loaded))
    if issues:
        raise ConfigError(issues)
    return base.absolute(), runs, warnings


def _not_inside_a_run(base: Path, default: bool) -> Path:
    """The sweep's base directory, never a run directory: ``hookrun runs`` lists a run, not the runs inside it.

    Args:
        base: the base the config or ``--run-dir`` gives.
        default: ``base`` is the default ``runs/<name>`` (no ``--run-dir``, no ``session.run_dir``).

    Returns:
        ``base``; or, when ``base`` is a run directory (a plain ``hookrun train`` of this config ran there)
        and the default, ``runs/<name>-sweep`` beside it.

    Raises:
        SetupError: ``base`` is a run directory that ``--run-dir`` or ``session.run_dir`` names, or
            ``runs/<name>-sweep`` is one too (exit 2).
    """
    from hookrun.runner.trained.runs import is_run_dir

    if not (base.is_dir() and is_run_dir(base)):
        return base
    if default:
        beside = base.with_name(base.name + "-sweep")
        if not (beside.is_dir() and is_run_dir(beside)):
            return beside
        base = beside
    raise SetupError(
        f"{base}: is a run directory (a `hookrun train` ran there); the sweep's runs inside it would not be listed "
        "by `hookrun runs`; give the sweep its own --run-dir"
    )


def run_sweep(
    base_dir: Path,
    runs: list[SweepRun],
    train: Callable[[SweepRun], Any],
    on_failure: Callable[[SweepRun, HookrunError], None] | None = None,
) -> SweepResult:
    """Run the planned combinations one after another.

    A run that fails (``TrainingError``, or a ``SetupError`` found only while building it) is marked
    ``failed`` and the next one starts. A run stopped by a signal (Ctrl-C, SIGTERM: it finished its
    step and saved) ends the sweep: the later runs stay ``pending``.

    Args:
        base_dir: the sweep's base run directory.
        runs: from :func:`plan_sweep`.
        train: trains one run and returns its ``TrainResult`` (``signal`` set when a signal stopped it).
        on_failure: called with each failed run and its error (to print it).

    Returns:
        The result; ``failed`` lists the failed runs.
    """
    result = SweepResult(base_dir=base_dir, runs=runs)
    for run in runs:
        try:
            outcome = train(run)
        except HookrunError as err:
            run.status, run.error = "failed", str(err).splitlines()[0] if str(err) else type(err).__name__
            if on_failure is not None:
                on_failure(run, err)
            continue
        if outcome.signal is not None:
            run.status = "interrupted"
            result.signal = outcome.signal
            break
        run.status = "finished"
    return result


def sweep(
    config: str | Path,
    sweeps: Sequence[str],
    overrides: Sequence[str] = (),
    run_dir: Path | None = None,
    console: Any = None,
    verbose: bool = False,
) -> SweepResult:
    """Check every combination, then train them one after another (the Python API of ``--sweep``).

    Args:
        config: the config file.
        sweeps: ``PATH=V1,V2,...`` texts (Hydra's multirun syntax; several: their cartesian product).
        overrides: ``--set`` texts applied to every run.
        run_dir: the base run directory (default the config's).
        console: where training prints (a ``rich`` console; default a new one).
        verbose: show TensorFlow's INFO logs.

    Returns:
        The result: each run's status; compare them with
        ``hookrun.runner.trained.runs.list_runs(result.base_dir)``.

    Raises:
        ConfigError, SetupError: a malformed ``--sweep`` or a combination that does not check (exit 2),
            before any training.
    """
    from hookrun.runner.trainer import train

    base, runs, _warnings = plan_sweep(config, sweeps, overrides, run_dir)
    return run_sweep(base, runs, lambda run: train(run.loaded, run_dir=run.run_dir, console=console, verbose=verbose))
