"""The `roofreport` command: inspect, parse, build, summary, compare, steps.

A thin client of the library (`roofreport.read`, `analyze`, `build_report`, `Dataset.write`), so
a script and the command give the same results. The only module that prints or chooses exit
codes: 0 when every input was read, 1 when some input failed but the output was written (or
`--strict` refused warnings), 2 for usage errors. Library errors arrive as RoofreportError
subclasses; no Python traceback reaches the user.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

import click

import roofreport
from roofreport import api
from roofreport.errors import RoofreportError, UsageError
from roofreport.families.common import limits as limits_mod

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

_paths = click.argument("paths", nargs=-1, required=True,
                        type=click.Path(exists=True, path_type=Path))
_jobs = click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes for many files (default: one per core, up to 4).")
_executor = click.option("--executor", default="local", show_default=True, metavar="local|dask|dask://HOST:PORT",
                         help="Where files are read: worker processes here, a Dask cluster started here "
                              "(or the one at DASK_SCHEDULER_ADDRESS), or the Dask scheduler at "
                              "HOST:PORT (pip install 'roofreport[dask]').")
_exclude = click.option("--exclude", "exclude", multiple=True, metavar="GLOB",
                        help="Leave files matching GLOB unread (repeatable; matched against the "
                             "path under the folder given, any trailing part of it, and the name).")
_gpu = click.option("--gpu", "gpu_name", default=None, metavar="NAME",
                    help="The GPU the runs ran on (e.g. 'A100-SXM4-40GB', 'A100 80GB', 'RTX 4090'): wins over "
                         "what the logs and paths say; names, labels, family and peaks follow it. A name "
                         "that leaves the variant open takes the table's default, marked assumed.")
_peaks = click.option("--peaks", "peaks_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                      default=None, help="TSV/TOML file adding or correcting GPU peak values.")
_LIMIT_OPTIONS = [
    click.option("--max-unpacked", metavar="SIZE", default=None,
                 help="Most bytes a compressed log may unpack to (default 2G; with --max-unpacked-ratio, "
                      "the smaller counts)."),
    click.option("--max-unpacked-ratio", type=click.FloatRange(min=1), default=None,
                 help="Most times its own size a compressed log may unpack to (default 50)."),
    click.option("--max-line", metavar="SIZE", default=None,
                 help="Longest line of a text log kept whole (default 1M); the rest of a longer "
                      "line is dropped, with a warning."),
    click.option("--max-memory", metavar="SIZE", default=None,
                 help="Memory each worker process may use (default unlimited; Linux/macOS): a file "
                      "needing more fails alone, the rest is still read."),
]


def _limits(command):
    """The limit options, passed to the command as one `limits` (a roofreport.toml beside the
    logs may lower them, never raise them)."""
    @functools.wraps(command)
    def with_limits(*args, max_unpacked, max_unpacked_ratio, max_line, max_memory, **kwargs):
        given = {"unpacked_bytes": _size(max_unpacked, "--max-unpacked"),
                 "unpacked_ratio": max_unpacked_ratio, "line_bytes": _size(max_line, "--max-line"),
                 "max_memory": _size(max_memory, "--max-memory")}
        limits = roofreport.Limits(**{key: value for key, value in given.items() if value is not None})
        return command(*args, limits=limits, **kwargs)

    for option in reversed(_LIMIT_OPTIONS):
        with_limits = option(with_limits)
    return with_limits


def _size(value: str | None, option: str) -> int | None:
    return None if value is None else _guard(lambda: limits_mod.parse_size(value, option))


# How `summary`, `compare` and `steps` print (terminal.py).
_wide = click.option("--wide", is_flag=True,
                     help="Names whole, one table each (else names elided in the middle and wide tables "
                          "split into panels to fit the terminal's width).")
_csv_dir = click.option("-o", "--output", "csv_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        metavar="DIR", help="With --format csv: write one CSV file per table into DIR.")


def _terminal_command_options(command):
    """The options summary, compare and steps share (in this order in their --help): the GPU,
    how their tables print, and how the logs are read."""
    quiet = click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
    for option in reversed((_gpu, _peaks, _wide, _csv_dir, quiet, _jobs, _executor, _exclude, _limits)):
        command = option(command)
    return command


# The view options (`analysis/view.py`): what `summary` and `build` show, never what they count.
_kernel = click.option("--kernel", "kernel", default=None, metavar="REGEX",
                       help="Show only kernels whose name matches REGEX (searched in full and short names, "
                            "as ncu --kernel-name regex:; (?i) ignores case). Run totals count every kernel.")


def _model_flops(counted_from: str):
    """`--model-flops` of `build` and `steps`, whose help names what it stands in for."""
    return click.option("--model-flops", "model_flops", type=float, default=None, metavar="N",
                        help="Model FLOPs of one training step, for MFU (instead of the FLOPs counted from "
                             f"{counted_from}).")


_run = click.option("--run", "runs", multiple=True, metavar="GLOB",
                    help="Show only runs whose id or label matches GLOB (repeatable), e.g. 'a100/*'.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(roofreport.__version__, prog_name="roofreport")
def cli() -> None:
    """Offline roofline, kernel-share and utilization reports from GPU profiler logs.

    Reads Nsight Compute (ncu: text, CSV, .ncu-rep), Nsight Systems (nsys), nvprof, PyTorch
    profiler (Kineto) traces, nvidia-smi, DCGM and Jetson tegrastats logs of any version from
    files or folders (walked recursively), without a GPU or NVIDIA tools. The same is a Python library: `import roofreport; roofreport.read("logs/")`.
    """


@cli.command()
@_paths
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout, one object per file.")
@click.option("--errors-only", is_flag=True, help="List only the files that failed (status error or partial).")
@_jobs
@_executor
@_exclude
@_limits
def inspect(paths: tuple[Path, ...], as_json: bool, errors_only: bool, jobs: int | None, executor: str,
            exclude: tuple[str, ...], limits: roofreport.Limits) -> None:
    """Show what every file is and what was read from it, then a count per status."""
    dataset = _read(paths, jobs, exclude, quiet=as_json, executor=executor, require_logs=False, limits=limits)
    shown = dataset.failed if errors_only else dataset.files
    if as_json:
        click.echo(json.dumps([f.as_json() for f in shown], indent=2))
    else:
        _print_inspect(shown)
        click.echo(f"{_plural(len(dataset.files), 'file')}: {_status_counts(dataset.files)}")
    _require_logs(dataset, paths)
    sys.exit(_exit_code(dataset, strict=False, listed=not as_json))


@cli.command()
@_paths
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(path_type=Path),
              help="Folder to write the tables to (created if needed).")
@click.option("--format", "fmt", type=click.Choice(api.TABLE_FORMATS), default="parquet", show_default=True,
              help="File format of the tables.")
@click.option("--update", is_flag=True,
              help="Keep DIR as an incremental dataset (partitioned Parquet): read only new and "
                   "changed files, drop the rows of files that are gone.")
@_gpu
@_peaks
@click.option("--strict", is_flag=True, help="Exit 1 when any file produced a warning.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@click.option("--verbose", "-v", is_flag=True, help="Also list every file's warnings on stderr.")
@_jobs
@_executor
@_exclude
@_limits
def parse(paths: tuple[Path, ...], out_dir: Path, fmt: str, update: bool, gpu_name: str | None,
          peaks_file: Path | None, strict: bool, quiet: bool, verbose: bool, jobs: int | None, executor: str,
          exclude: tuple[str, ...], limits: roofreport.Limits) -> None:
    """Read logs into the shared tables and write one file per table.

    Tables: kernels, metrics, activities, api_calls, samples, regions, steps, estimates, runs, files. With
    --update, DIR is a dataset folder that `roofreport build DIR`, `roofreport.read(DIR)`,
    polars, DuckDB and pandas read (README: Incremental datasets).
    """
    if update:
        if fmt != "parquet":
            _usage("--update keeps a Parquet dataset; leave out --format")
        _guard(lambda: api.check_outputs([out_dir], paths))
        dataset = _read(paths, jobs, exclude, quiet, executor=executor, into=out_dir, limits=limits,
                        gpu=gpu_name, peaks=peaks_file)
        if not quiet:
            for message in dataset.update_report.messages:
                click.echo(f"roofreport: {message}", err=True)
            _summary(dataset, verbose)
            click.echo(f"updated {out_dir}/ in {dataset.update_report.seconds:.1f} s: {dataset.update_report.summary()}",
                       err=True)
        sys.exit(_exit_code(dataset, strict, listed=not quiet))
    _guard(lambda: api.check_outputs([out_dir, *api.table_files(out_dir, fmt)], paths))
    _warn_inside_inputs([out_dir], paths, quiet)
    # Read through a dataset folder of its own, a batch of files at a time, and streamed into
    # one file per table: a campaign's rows are never all in memory (README: Scale). Logs that
    # make one batch are read in memory: that folder would hold their rows whole all the same,
    # and spooling them to disk and back costs CPU and memory for nothing (the tables are equal).
    if _guard(lambda: api.one_batch(paths)):
        dataset = _read(paths, jobs, exclude, quiet, executor=executor, limits=limits, gpu=gpu_name,
                        peaks=peaks_file)
        written = _guard(lambda: dataset.write(out_dir, fmt))
    else:
        with tempfile.TemporaryDirectory(prefix="roofreport-parse-") as spool:
            dataset = _read(paths, jobs, exclude, quiet, executor=executor, into=Path(spool) / "dataset",
                            limits=limits, gpu=gpu_name, peaks=peaks_file)
            written = _guard(lambda: dataset.write(out_dir, fmt))
    if not quiet:
        _summary(dataset, verbose)
        click.echo(f"wrote {len(written)} tables to {out_dir}/ ({fmt})", err=True)
    sys.exit(_exit_code(dataset, strict, listed=not quiet))


@cli.command()
@_paths
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path),
              help="Report to write: REPORT.pdf or REPORT.html.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="Also write the HTML report here (with a PDF -o).")
@click.option("--title", default=None, help="Report title (default: from the input folder).")
@click.option("--json-summary", "json_out", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Also write what page 1 says as JSON: findings, speedups with their reasons, per-run totals.")
@_gpu
@_peaks
@click.option("--top", "top_n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Kernels to list per run.")
@click.option("--window", default=None, metavar="START:END",
              help="Utilization window in seconds from the first sample, e.g. 60:240.")
@_model_flops("a PyTorch trace's shapes")
@_kernel
@_run
@click.option("--baseline", "baseline", type=click.Path(exists=True, path_type=Path), default=None, metavar="B",
              help="Logs or a dataset folder to compare the runs with (as `compare B LOGS`): a section of "
                   "time per category and kernel, delta and speedup.")
@click.option("--strict", is_flag=True, help="Exit 1 when any file produced a warning.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@click.option("--verbose", "-v", is_flag=True, help="Also list every file's warnings on stderr.")
@_jobs
@_executor
@_exclude
@_limits
def build(paths: tuple[Path, ...], output: Path, html_out: Path | None, title: str | None, json_out: Path | None,
          gpu_name: str | None, peaks_file: Path | None, top_n: int, window: str | None,
          model_flops: float | None, kernel: str | None, runs: tuple[str, ...], baseline: Path | None,
          strict: bool, quiet: bool, verbose: bool, jobs: int | None, executor: str, exclude: tuple[str, ...],
          limits: roofreport.Limits) -> None:
    """Build the HTML/PDF report from logs (or from a dataset folder `parse --update` keeps).

    --kernel and --run narrow what the report shows; run totals count every kernel. The HTML
    is interactive (hover a roofline point, toggle runs, sort kernel tables); the PDF is static.
    """
    reading = _reading(paths, jobs, exclude, quiet, executor=executor, limits=limits, gpu=gpu_name,
                       peaks=peaks_file)
    read: dict[bool, roofreport.Dataset] = {}

    def have_read(dataset: roofreport.Dataset, is_baseline: bool) -> None:
        _require_logs(dataset, (baseline,) if is_baseline else paths)
        read[is_baseline] = dataset

    def analysing(dataset: roofreport.Dataset) -> None:
        if not quiet:
            _summary(dataset, verbose)
            click.echo(f"roofreport: analysing {_plural(dataset.runs.height, 'run')}…", err=True)

    def rendering() -> None:
        if not quiet:
            click.echo(f"roofreport: rendering {_rendering(output, html_out)}…", err=True)

    read_from = [*paths, *([baseline] if baseline else [])]
    _guard(lambda: api.check_outputs([output, html_out], read_from, report=True))
    _guard(lambda: api.check_outputs([json_out], read_from))
    _warn_inside_inputs([output, html_out, json_out], paths, quiet)
    # One orchestration: the command is the API's build, given the same options.
    written = _guard(lambda: api.build_report(
        reading, output, html=html_out, title=title, json_summary=json_out, top=top_n, window=window,
        model_flops=model_flops, kernel=kernel, runs=runs, baseline=baseline,
        steps=api.BuildSteps(read=have_read, analysing=analysing, rendering=rendering)))
    if not quiet:
        for path in written:
            click.echo(f"wrote {path}", err=True)
    sys.exit(max(_exit_code(read[False], strict, listed=not quiet),
                 EXIT_OK if True not in read else _exit_code(read[True], strict)))


@cli.command()
@_paths
@click.option("--format", "fmt", type=click.Choice(("table", "csv", "json")), default="table", show_default=True,
              help="A text table, CSV (base units: ns, FLOP) or one JSON object.")
@click.option("--table", "only", type=click.Choice(("runs", "categories", "kernels")), default=None,
              help="Print this table only (one plain CSV with --format csv).")
@click.option("--top", "top_n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Kernels listed per run.")
@_kernel
@_run
@_terminal_command_options
def summary(paths: tuple[Path, ...], fmt: str, only: str | None, top_n: int, kernel: str | None,
            runs: tuple[str, ...], gpu_name: str | None, peaks_file: Path | None, wide: bool, csv_dir: Path | None,
            quiet: bool, jobs: int | None, executor: str, exclude: tuple[str, ...], limits: roofreport.Limits) -> None:
    """Print the runs, their kernel categories and their top kernels.

    Like `nsys stats` for a whole folder: per run its totals, the time of each kernel category
    and its --top kernels (launches, total and average time, share of the run's GPU time).
    --kernel and --run narrow what is shown; run totals and shares count every kernel.
    """
    from roofreport import terminal

    _check_csv(fmt, only, csv_dir, ("runs", "categories", "kernels"))
    _guard(lambda: roofreport.api.view(kernel=kernel, runs=runs))  # a bad regex fails before any reading
    dataset = _read(paths, jobs, exclude, quiet, executor=executor, limits=limits, gpu=gpu_name, peaks=peaks_file)
    result = _guard(lambda: roofreport.api.summary(dataset, kernel=kernel, runs=runs, top=top_n))
    if csv_dir is not None and only is None:
        _write_csv_files(terminal.csv_files(result.frames()), csv_dir, quiet)
    else:
        click.echo(terminal.summary(result.frames(), fmt, only, top_n, _layout(wide)))
    if result.view.narrows and not quiet:
        click.echo(f"roofreport: showing {result.view.describe()}; run totals count every kernel", err=True)
    sys.exit(_exit_code(dataset, strict=False))


@cli.command()
@click.argument("first", metavar="A", type=click.Path(exists=True, path_type=Path))
@click.argument("second", metavar="[B]", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--run-a", "runs_a", multiple=True, metavar="GLOB",
              help="Runs of A to compare (globs over run ids and labels; repeatable).")
@click.option("--run-b", "runs_b", multiple=True, metavar="GLOB",
              help="Runs of B to compare (of A when B is left out).")
@click.option("--format", "fmt", type=click.Choice(("table", "csv", "json")), default="table", show_default=True,
              help="A text table, CSV (base units: ns, FLOP/s) or one JSON object.")
@click.option("--table", "only", type=click.Choice(("pairs", "unpaired", "totals", "categories", "kernels")),
              default=None, help="Print this table only (one plain CSV with --format csv).")
@click.option("--top", "top_n", type=click.IntRange(min=1), default=15, show_default=True,
              help="Kernels listed per pair of runs, biggest change first.")
@_terminal_command_options
def compare(first: Path, second: Path | None, runs_a: tuple[str, ...], runs_b: tuple[str, ...], fmt: str,
            only: str | None, top_n: int, gpu_name: str | None, peaks_file: Path | None, wide: bool,
            csv_dir: Path | None, quiet: bool, jobs: int | None, executor: str, exclude: tuple[str, ...],
            limits: roofreport.Limits) -> None:
    """Compare B with A (the baseline): time per category and per kernel, delta and speedup.

    A and B are folders, files or dataset folders; or one of them with --run-a and --run-b
    choosing runs of it. One run on each side is compared as it is; several pair by workload
    (model and configuration). On one GPU architecture kernels match by name (and launch
    configuration where names collide); across architectures those whose names differ are
    pooled per category. B - A: negative is time saved; A/B above 1: B is faster.
    """
    from roofreport import terminal

    if second is None and not (runs_a and runs_b):
        _usage("give two folders A B, or one with --run-a GLOB and --run-b GLOB")
    _check_csv(fmt, only, csv_dir, ("pairs", "unpaired", "totals", "categories", "kernels"))
    # --gpu and --peaks: the GPU both sides ran on, the peaks both are set against
    gpu = dict(gpu=gpu_name, peaks=peaks_file)
    _guard(lambda: api.gpu_settings(**gpu))    # before either side is read
    sides = [_read((first,), jobs, exclude, quiet, executor=executor, limits=limits, **gpu)]
    if second is not None:
        sides.append(_read((second,), jobs, exclude, quiet, executor=executor, limits=limits, **gpu))
    result = _guard(lambda: roofreport.api.compare(sides[0], sides[-1], runs_a=runs_a, runs_b=runs_b))
    if csv_dir is not None and only is None:
        _write_csv_files(terminal.csv_files(result.frames(top=top_n)), csv_dir, quiet)
    else:
        click.echo(terminal.comparison(result.frames(top=top_n), fmt, only, _layout(wide)))
    for note in result.pairs["note"].drop_nulls().to_list():
        if not quiet and "not like for like" in note:
            click.echo(f"roofreport: warning: {note}", err=True)
    sys.exit(max(_exit_code(side, strict=False) for side in sides))


@cli.command()
@_paths
@click.option("--format", "fmt", type=click.Choice(("table", "csv", "json")), default="table", show_default=True,
              help="A text table, CSV (base units: ns, FLOP/s, percent) or one JSON object.")
@click.option("--table", "only", type=click.Choice(("runs", "steps")), default=None,
              help="Print this table only (one plain CSV with --format csv).")
@_model_flops("the trace's shapes")
@_run
@_terminal_command_options
def steps(paths: tuple[Path, ...], fmt: str, only: str | None, model_flops: float | None, runs: tuple[str, ...],
          gpu_name: str | None, peaks_file: Path | None, wide: bool, csv_dir: Path | None, quiet: bool,
          jobs: int | None, executor: str, exclude: tuple[str, ...], limits: roofreport.Limits) -> None:
    """Print the training steps of PyTorch profiler traces: time breakdown and MFU.

    Per run the medians over its steps (ProfilerStep#N; steps more than 25 % from the median
    step time, such as the first, left out): step time, MFU and HFU against the GPU's dense
    peak at the steps' precision, and where the step time goes on the GPU (compute,
    communication, memory copies, idle). Then every step. As the report's "Training steps".
    """
    from roofreport import terminal

    _check_csv(fmt, only, csv_dir, terminal.STEP_TABLES)
    settings = dict(gpu=gpu_name, peaks=peaks_file, model_flops=model_flops, runs=runs)
    _guard(lambda: api.analysis_settings(**settings))  # bad options fail before any reading
    dataset = _read(paths, jobs, exclude, quiet, executor=executor, limits=limits, gpu=gpu_name, peaks=peaks_file)
    analysis = _guard(lambda: roofreport.analyze(dataset, **settings))
    frames = terminal.step_frames(analysis.step_summary, analysis.steps, analysis.runs)
    if not analysis.step_summary.height and not quiet:
        click.echo("roofreport: no training steps: a PyTorch profiler trace with prof.step() each "
                   "iteration gives them", err=True)
    if csv_dir is not None and only is None:
        _write_csv_files(terminal.csv_files(frames), csv_dir, quiet)
    else:
        click.echo(terminal.step_tables(frames, fmt, only, _layout(wide)))
    sys.exit(_exit_code(dataset, strict=False))


# -- helpers ---------------------------------------------------------------------------------

def _layout(wide: bool):
    """How tables fit the terminal: $COLUMNS, else the width of the terminal stdout is; no
    width (names cut to a fixed length) when stdout is a pipe or a file."""
    from roofreport import terminal

    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return terminal.Layout(width=int(given), wide=wide)
    if sys.stdout.isatty():
        import shutil

        return terminal.Layout(width=shutil.get_terminal_size().columns, wide=wide)
    return terminal.Layout(wide=wide)


def _check_csv(fmt: str, only: str | None, csv_dir: Path | None, tables: tuple[str, ...]) -> None:
    """CSV is one table a stream: several need --table NAME, or -o DIR (a file each). Said
    before anything is read."""
    if csv_dir is not None and fmt != "csv":
        _usage("-o DIR writes CSV files: add --format csv")
    if fmt == "csv" and only is None and csv_dir is None:
        _usage(f"--format csv prints one table: add --table NAME ({', '.join(tables)}), "
               "or -o DIR for one CSV file per table")


def _write_csv_files(files: dict[str, str], folder: Path, quiet: bool) -> None:
    """One CSV file per table in `folder` (created), each written whole or not at all."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            partial = folder / f".{name}.partial"
            partial.write_text(text, encoding="utf-8")
            partial.replace(folder / name)
    except OSError as exc:
        click.echo(f"roofreport: error: cannot write {folder}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_FAILED)
    if not quiet:
        click.echo(f"wrote {len(files)} CSV files to {folder}/ ({', '.join(files)})", err=True)


def _reading(paths: tuple[Path, ...], jobs: int | None, exclude: tuple[str, ...], quiet: bool,
             executor: str | None = None, into: Path | None = None, limits: roofreport.Limits | None = None,
             gpu: str | None = None, peaks: Path | None = None) -> roofreport.ReadOptions:
    """How the command reads `paths` (`ReadOptions`), checked: a GPU the table lacks is exit 2,
    nothing read."""
    progress = not quiet and sys.stderr.isatty()
    return _guard(lambda: api.read_options(list(paths), gpu=gpu, peaks=peaks, jobs=jobs, exclude=exclude,
                                           progress=progress, executor=executor, dataset=into, limits=limits))


def _read(paths: tuple[Path, ...], jobs: int | None, exclude: tuple[str, ...], quiet: bool,
          executor: str | None = None, into: Path | None = None,
          require_logs: bool = True, limits: roofreport.Limits | None = None, gpu: str | None = None,
          peaks: Path | None = None) -> roofreport.Dataset:
    """Read `paths`; with `require_logs`, stop (exit 1) when not one file is a profiler log."""
    reading = _reading(paths, jobs, exclude, quiet, executor=executor, into=into, limits=limits, gpu=gpu,
                       peaks=peaks)
    dataset = _guard(lambda: roofreport.read(reading))
    if require_logs:
        _require_logs(dataset, paths)
    return dataset


def _require_logs(dataset: roofreport.Dataset, paths: tuple[Path, ...]) -> None:
    """Exit 1 with a message when no file under `paths` is a log roofreport reads."""
    if any(file.family for file in dataset.files):
        return
    where = " ".join(str(p) for p in paths)
    found = (f"{_plural(len(dataset.files), 'file')}, none of them a log roofreport reads "
             f"(`roofreport inspect {where}` says what each one is)") if dataset.files else "no files"
    click.echo(f"roofreport: error: no profiler log found in {where}: {found}", err=True)
    sys.exit(EXIT_FAILED)


def _warn_inside_inputs(outputs: list[Path | None], paths: tuple[Path, ...], quiet: bool) -> None:
    """An output inside an input folder is found by the next run over that folder."""
    if quiet:
        return
    for output, folder in api.outputs_inside_inputs(outputs, paths):
        click.echo(f"roofreport: warning: {output} is inside the input folder {folder}: the next run over "
                   f"{folder} will read it back (write it elsewhere, or leave it out with --exclude)", err=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _rendering(output: Path, html_out: Path | None) -> str:
    """What `build` renders, in words: "PDF report.pdf", "HTML report.html and PDF report.pdf"."""
    kind = "PDF" if output.suffix.lower() == ".pdf" else "HTML"
    return (f"HTML {html_out} and " if html_out is not None else "") + f"{kind} {output}"


def _guard(action):
    """Run a library call; roofreport's errors become a message and an exit code. Anything
    else is a defect: one line saying so (the traceback with ROOFREPORT_DEBUG=1), exit 1."""
    try:
        return action()
    except UsageError as exc:
        _usage(str(exc))
    except RoofreportError as exc:
        click.echo(f"roofreport: error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    except BaseException as exc:  # noqa: BLE001 - no traceback reaches the user
        # BaseException: a polars panic (pyo3 PanicException) is not an Exception.
        if isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit)) \
                or os.environ.get("ROOFREPORT_DEBUG"):
            raise
        first = str(exc).splitlines()[0][:300] if str(exc) else ""
        click.echo(f"roofreport: internal error ({type(exc).__name__}: {first}); this is a "
                   "roofreport defect: set ROOFREPORT_DEBUG=1 for the traceback", err=True)
        sys.exit(EXIT_FAILED)


def _usage(message: str) -> None:
    click.echo(f"roofreport: usage error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _exit_code(dataset: roofreport.Dataset, strict: bool, listed: bool = False) -> int:
    """1 when a file failed (saying why on stderr; `listed`: the failed files are listed
    already, one line is enough) or `strict` refuses warnings, else 0."""
    if dataset.failed:
        _say_failures(dataset, listed)
        return EXIT_FAILED
    if strict and dataset.warning_count:
        click.echo(f"roofreport: --strict: {dataset.warning_count} warning(s)", err=True)
        return EXIT_FAILED
    return EXIT_OK


def _say_failures(dataset: roofreport.Dataset, listed: bool) -> None:
    """Why the command exits 1, on stderr: how many files failed and were read, and (unless
    `listed`) each failed file with its error."""
    failed = dataset.failed
    read = sum(1 for file in dataset.files if file.status == "ok")
    click.echo(f"roofreport: {len(failed)} of {_plural(len(dataset.files), 'file')} failed, "
               f"{read} read ({_status_counts(dataset.files)}): the output holds what the others gave"
               + ("" if listed else ":"), err=True)
    if not listed:
        for file in failed:
            click.echo(f"  {file.status}: {file.error or file.path}", err=True)


_STATUS_ORDER = ("ok", "partial", "error", "skipped")


def _status_counts(files: list[roofreport.FileOutcome]) -> str:
    """"10 ok, 1 partial, 2 skipped": files per status, in this order."""
    counts: dict[str, int] = {}
    for file in files:
        counts[file.status] = counts.get(file.status, 0) + 1
    order = sorted(counts, key=lambda s: (_STATUS_ORDER.index(s) if s in _STATUS_ORDER else len(_STATUS_ORDER), s))
    return ", ".join(f"{counts[status]} {status}" for status in order) or "none"


def _summary(dataset: roofreport.Dataset, verbose: bool = False) -> None:
    """What reading gave, on stderr; with `verbose`, every file's warnings."""
    click.echo(f"{_plural(len(dataset.files), 'file')}: {_status_counts(dataset.files)}", err=True)
    for file in dataset.failed:
        click.echo(f"  {file.status}: {file.error}", err=True)
    if verbose:
        for file in dataset.files:
            if file.warnings:
                click.echo(f"  {file.path}:", err=True)
                _print_warnings(file, indent="    ", err=True)
    elif dataset.warning_count:
        click.echo(f"  {dataset.warning_count} warning(s); `-v` or `roofreport inspect` lists them", err=True)


def _print_inspect(files: list[roofreport.FileOutcome]) -> None:
    for file in files:
        rows = ", ".join(f"{n} {table}" for table, n in sorted(file.rows.items())) or "-"
        what = (f"{file.family} {file.variant}" if file.family
                else "excluded" if file.excluded else "not a log")
        click.echo(f"{file.path}\n    {file.status}: {what}; rows: {rows}")
        if file.run:
            click.echo(f"    run: {file.run}")
        if file.error:
            click.echo("    " + file.error.replace("\n", "\n    "))
        _print_warnings(file, indent="    ")


def _print_warnings(file: roofreport.FileOutcome, indent: str, err: bool = False, limit: int = 20) -> None:
    for warning in file.warnings[:limit]:
        where = f" line {warning.line}" if warning.line else ""
        click.echo(f"{indent}warning [{warning.code}]{where}: {warning.message.splitlines()[0]}", err=err)
    if len(file.warnings) > limit:
        click.echo(f"{indent}... and {len(file.warnings) - limit} more warnings", err=err)


def main() -> None:
    """The command (after `roofreport.__main__`'s process settings). Ctrl-C exits 130 (128 +
    SIGINT, as shells expect) with one line; outputs are written atomically, so an interrupted
    command leaves none half-written, and worker processes leave SIGINT to this one, which
    stops them (`pipeline/workers.py`)."""
    try:
        code = cli.main(standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):   # click turns Ctrl-C into Abort
        signal.signal(signal.SIGINT, signal.SIG_IGN)      # another Ctrl-C while exiting: quiet too
        click.echo("roofreport: interrupted", err=True)   # (click has ended the ^C line)
        # Every `finally` has run by now (temporary files removed, workers stopped): the
        # interpreter's own shutdown (Dask's exit hooks, thread joins: a second or more on a
        # busy machine) would only delay the exit the user asked for.
        sys.stdout.flush()
        sys.stderr.flush()
        from roofreport.pipeline.workers import reap_children

        reap_children()   # no process of ours outlives the command, not even as a zombie
        os._exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:                   # bad options: click's message, exit 2
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else EXIT_OK)
