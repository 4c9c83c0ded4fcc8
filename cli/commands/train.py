"""``hookrun train CONFIG``: validate, build the graph, run the hooks, show the history."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hookrun.cli.options import ConfigArg, ConfigOption, DebugOption, SetOption, VerboseOption, non_empty_path


def train_command(
    config: ConfigArg,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir", help="Where artefacts go (overrides session.run_dir).", show_default=False,
            parser=non_empty_path,
        ),
    ] = None,
    set_: SetOption = None,
    config_: ConfigOption = None,
    verbose: VerboseOption = False,
    allow_config_change: Annotated[
        bool,
        typer.Option(
            "--allow-config-change", help="Resume even if the graph or data shape differs from the saved config."
        ),
    ] = False,
    trace: Annotated[
        bool,
        typer.Option(
            "--trace",
            help="Record every hook method call to <run_dir>/trace.jsonl and print a per-hook cost table "
            "(as session.trace: true).",
        ),
    ] = False,
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            help="On a cluster (`cluster:` or TF_CONFIG): this process's task, JOB:INDEX, e.g. worker:1, ps:0 "
            "(default: TF_CONFIG's task).",
            show_default=False,
        ),
    ] = None,
    local_cluster: Annotated[
        str | None,
        typer.Option(
            "--local-cluster",
            help="Run the whole cluster here, each task a child process on 127.0.0.1 with free ports, "
            "e.g. ps=1,worker=2 (chief=1 optional).",
            show_default=False,
        ),
    ] = None,
    sweep: Annotated[
        list[str] | None,
        typer.Option(
            "--sweep",
            help="Train one run per value, e.g. graph.optimizer.learning_rate=0.001,0.003,0.01 (Hydra's multirun "
            "syntax; repeatable: the cartesian product), one after another, each in <run dir>/<its values>; "
            "then print the comparison table. Exit 1 if any run failed.",
            show_default=False,
            metavar="PATH=V1,V2",
        ),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Train: validate the config, build the graph, run the monitored session with the configured hooks.

    Re-running with the same run directory resumes from its latest checkpoint.
    Ctrl-C (or SIGTERM) finishes the current step, runs every hook's end()
    (so checkpoint_saver saves), and exits 130 (143 for SIGTERM); a second
    Ctrl-C exits at once. A closed standard output (hookrun train ... | head) stops the same way, exit 141.

    --sweep PATH=V1,V2 trains one run per value (repeatable: every combination), one after another, each
    in its own run directory named after its values under the run directory; every combination is
    checked before the first starts. Ctrl-C stops the current run as above and starts no other. Exit
    1 if any run failed.

    On a cluster each process is one task (--task worker:1, or TF_CONFIG); --local-cluster
    ps=1,worker=2 starts them all here and stops them all when the chief finishes, on Ctrl-C, or
    when one fails.
    """
    from hookrun.runner.cluster.local import watch_launcher

    watch_launcher()  # a task of --local-cluster: stop when the launcher is gone
    from hookrun.cli.console import OutputConsole
    from hookrun.cli.errors import print_issues, reported_errors
    from hookrun.cli.render import history_table, trace_table
    from hookrun.common.numbers import format_number
    from hookrun.config_schemas.loader import ConfigError
    from hookrun.runner.config import load_checked

    out = OutputConsole()
    err = OutputConsole(stderr=True)
    with reported_errors(err, debug):
        if sweep:
            raise typer.Exit(_run_sweep(config, sweep, set_ or [], run_dir, task, local_cluster, verbose,
                                        allow_config_change, trace, out, err, config_ or []))
        loaded, issues = load_checked(config, set_ or [], run_dir, configs=config_ or [])
        if issues:
            print_issues(err, ConfigError(issues))
        if local_cluster is not None:
            code = _run_local_cluster(
                config, local_cluster, task, run_dir, set_, verbose, allow_config_change, trace, debug, config_
            )
            raise typer.Exit(code)
        from hookrun.runner.trainer import train

        result = train(
            loaded,
            run_dir=run_dir,
            console=out,
            verbose=verbose,
            allow_config_change=allow_config_change,
            trace=trace,
            task=task,
        )
        for note in result.notes[result.notes_shown:]:  # train printed the first ones before training
            out.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
        if result.task is not None and result.task.startswith("ps:"):
            out.print(
                f"{result.task}: served for {result.loop_seconds:.1f} s, until the chief finished", highlight=False
            )
            return
        if result.history:
            best = result.best
            out.print(
                history_table(
                    result.history,
                    result.history_columns,
                    best_step=best.step if best is not None else None,
                    best_monitor=best.monitor if best is not None else None,
                )
            )
        if result.trace_summary is not None:
            out.print(trace_table(result.trace_summary))
        if result.signal is not None:
            saved = ""
            if result.checkpoint_path and result.checkpoint_path.endswith(f"-{result.final_global_step}"):
                saved = f", checkpoint saved: {result.checkpoint_path}"
            elif result.checkpoint_path:  # no checkpoint_saver wrote one at this step
                saved = f", no checkpoint at this step (latest: {result.checkpoint_path})"
            import signal

            why = "output closed (its reader left): stopped" if result.signal == signal.SIGPIPE else "interrupted"
            err.print(f"{why} at step {result.final_global_step}{saved}", style="yellow", highlight=False,
                      soft_wrap=True)
            raise typer.Exit(128 + result.signal)
        complete = _complete(loaded, result)
        if complete is not None:
            out.print(complete, highlight=False, soft_wrap=True, markup=False)
        start = result.start_global_step if result.start_global_step is not None else result.initial_step
        how = result.stop_reason or ("end of data" if result.end_of_data else "stop requested")
        out.print(
            f"trained {result.steps} steps (global step {start} → {result.final_global_step}, {how}) "
            f"in {result.loop_seconds:.1f} s, {result.steps_per_sec:,.0f} steps/s",
            highlight=False,
        )
        out.print(f"run directory: {result.run_dir}", highlight=False)
        if result.checkpoint_path:
            out.print(f"checkpoint: {result.checkpoint_path} (latest)", highlight=False, soft_wrap=True)
        if result.best is not None and result.best.path is not None:
            best = result.best
            out.print(
                f"best checkpoint (step {best.step}, {best.monitor} {format_number(best.value)}): {best.path}",
                highlight=False, soft_wrap=True,
            )


def _complete(loaded: Any, result: Any) -> str | None:
    """The line saying a resumed run had nothing left to train, and how to train more; None when it trained.

    A run whose checkpoint has trained every epoch trains 0 steps when run again: the line says so and
    gives the ``--set`` that trains further. (A ``stop_at_step`` already reached still runs one step, as
    TensorFlow's ``StopAtStepHook`` does, so it never gets here.)
    """
    if result.steps or result.signal is not None or result.initial_step == 0:
        return None
    step = result.final_global_step
    hint = "or train a new run with --run-dir"
    epochs = loaded.config.data.epochs
    if result.end_of_data and epochs is not None:
        return (f"the run is complete: its checkpoint at step {step} has trained all {epochs} epochs "
                f"(data.epochs). To train more, raise them, e.g. --set data.epochs={2 * epochs}; {hint}")
    return f"the run trained no step: its checkpoint is at step {step}; {hint}"


def _run_local_cluster(
    config: Path,
    spec: str,
    task: str | None,
    run_dir: Path | None,
    set_: list[str] | None,
    verbose: bool,
    allow_config_change: bool,
    trace: bool,
    debug: bool,
    configs: list[Path] | None = None,
) -> int:
    """Run every task of ``spec`` as a child ``hookrun train --task ...``, passing the other flags on."""
    from hookrun.common.errors import SetupError
    from hookrun.runner.cluster.local import run_local_cluster

    if task is not None:
        raise SetupError("--task and --local-cluster exclude each other: --local-cluster starts every task itself")
    args: list[str] = []
    for extra in configs or []:
        args += ["--config", str(extra)]
    for item in set_ or []:
        args += ["--set", item]
    if run_dir is not None:
        args += ["--run-dir", str(run_dir)]
    flags = {"--verbose": verbose, "--allow-config-change": allow_config_change, "--trace": trace, "--debug": debug}
    args += [flag for flag, on in flags.items() if on]
    return run_local_cluster(config, spec, args)


def _run_sweep(
    config: Path,
    sweep: list[str],
    set_: list[str],
    run_dir: Path | None,
    task: str | None,
    local_cluster: str | None,
    verbose: bool,
    allow_config_change: bool,
    trace: bool,
    out: Any,
    err: Any,
    configs: list[Path] | None = None,
) -> int:
    """``--sweep``: check every combination, train them in turn, print the table; the exit code.

    Returns:
        0 when every run finished, 1 when one failed, 128 + the signal when a signal stopped the sweep.
    """
    from hookrun.cli.commands.runs import render_runs
    from hookrun.cli.errors import print_issues
    from hookrun.cli.exit_codes import EXIT_OK, EXIT_TRAINING_FAILED
    from hookrun.common.errors import SetupError
    from hookrun.config_schemas.loader import ConfigError
    from hookrun.runner.trained.runs import list_runs
    from hookrun.runner.trained.sweep import plan_sweep, run_sweep
    from hookrun.runner.trainer import train

    if task is not None or local_cluster is not None:
        raise SetupError("--sweep trains its runs one after another in this process; leave out --task and "
                         "--local-cluster")
    base, runs, warnings = plan_sweep(config, sweep, set_, run_dir, configs=configs or [])
    if warnings:
        print_issues(err, ConfigError(warnings))
    out.print(f"sweep: {len(runs)} runs in {base}", highlight=False, soft_wrap=True)

    def one(run: Any) -> Any:
        out.print(f"\n[bold]run {runs.index(run) + 1}/{len(runs)}: {run.name}[/]", highlight=False)
        result = train(run.loaded, run_dir=run.run_dir, console=out, verbose=verbose,
                       allow_config_change=allow_config_change, trace=trace)
        for note in result.notes[result.notes_shown:]:  # train printed the first ones before training
            out.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
        return result

    def failed(run: Any, error: Exception) -> None:
        if isinstance(error, ConfigError):
            print_issues(err, error)
        else:
            err.print(f"error: {run.name}: {error}", style="red", markup=False, highlight=False, soft_wrap=True)

    result = run_sweep(base, runs, one, failed)
    table = list_runs(base, names=[run.name for run in runs if run.status != "pending"])
    render_runs(out, table)
    if result.signal is not None:
        left = sum(run.status == "pending" for run in result.runs)
        err.print(f"sweep stopped by a signal: {left} run(s) not started", style="yellow", highlight=False)
        return 128 + result.signal
    if result.failed:
        err.print(f"{len(result.failed)} of {len(runs)} runs failed: " + ", ".join(r.name for r in result.failed),
                  style="red", highlight=False, soft_wrap=True)
        return EXIT_TRAINING_FAILED
    return EXIT_OK
