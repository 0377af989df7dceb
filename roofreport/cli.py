"""The `roofreport` command: inspect, parse, build.

The only module that prints or chooses exit codes: 0 when every input was read, 1 when some
input failed but the output was written (or `--strict` refused warnings), 2 for usage errors.
Library errors arrive as RoofreportError subclasses; no Python traceback reaches the user.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

# Memory polars frees goes back to the system within 200 ms (a background thread returns it)
# instead of staying in its allocator for the rest of the run: ~120-160 MB lower peak on a
# 400 MB trace at the same CPU time. Read when polars is first imported, so set before the
# imports below; a setting of the user's own wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0")

# Importing polars and roofreport makes some 10^5 objects that live as long as the process; the
# cyclic garbage collector would walk them over and over while they are made (~10 ms of a
# small file's ~0.2 s run). It is off while they are imported, and `main` freezes them.
gc.disable()
try:
    import click

    from roofreport.errors import RoofreportError, UsageError
    from roofreport.pipeline.ingest import Dataset, FileOutcome, ingest
    from roofreport.tables.output import (
        TABLE_FORMATS,
        check_not_input,
        table_paths,
        write_tables,
    )
    from roofreport.version import __version__
finally:
    gc.enable()

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

_paths = click.argument("paths", nargs=-1, required=True,
                        type=click.Path(exists=True, path_type=Path))
_jobs = click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes for many files (default: one per core, up to 4).")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="roofreport")
def cli() -> None:
    """Offline roofline, kernel-share and utilization reports from GPU profiler logs.

    Reads Nsight Compute (ncu), Nsight Systems (nsys), nvprof and nvidia-smi logs of any
    version from files or folders (walked recursively), without a GPU or NVIDIA tools.
    """


@cli.command()
@_paths
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout, one object per file.")
@_jobs
def inspect(paths: tuple[Path, ...], as_json: bool, jobs: int | None) -> None:
    """Show what every file is and what was read from it."""
    dataset = _ingest(paths, jobs, quiet=as_json)
    if as_json:
        click.echo(json.dumps([f.as_json() for f in dataset.files], indent=2))
    else:
        _print_inspect(dataset.files)
    sys.exit(EXIT_FAILED if dataset.failed else EXIT_OK)


@cli.command()
@_paths
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(path_type=Path),
              help="Folder to write the tables to (created if needed).")
@click.option("--format", "fmt", type=click.Choice(TABLE_FORMATS), default="parquet", show_default=True,
              help="File format of the tables.")
@click.option("--strict", is_flag=True, help="Exit 1 when any file produced a warning.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@_jobs
def parse(paths: tuple[Path, ...], out_dir: Path, fmt: str, strict: bool, quiet: bool,
          jobs: int | None) -> None:
    """Read logs into the shared tables and write one file per table.

    Tables: kernels, metrics, activities, api_calls, samples, regions, runs, files.
    """
    for target in [out_dir, *table_paths(out_dir, fmt)]:
        _guard(lambda: check_not_input(target, paths))
    dataset = _ingest(paths, jobs, quiet)
    written = _guard(lambda: write_tables(dataset, out_dir, fmt))
    if not quiet:
        _summary(dataset)
        click.echo(f"wrote {len(written)} tables to {out_dir}/ ({fmt})", err=True)
    sys.exit(_exit_code(dataset, strict))


@cli.command()
@_paths
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path),
              help="Report to write: REPORT.pdf or REPORT.html.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="Also write the HTML report here (with a PDF -o).")
@click.option("--title", default=None, help="Report title (default: from the input folder).")
@click.option("--gpu", "gpu_override", default=None,
              help="GPU name to assume for runs whose logs do not name one (e.g. 'A100-SXM4-40GB').")
@click.option("--peaks", "peaks_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="TSV/TOML file overriding or adding GPU peak values.")
@click.option("--top", "top_n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Kernels to list per run.")
@click.option("--window", default=None, metavar="START:END",
              help="Utilization window in seconds from the first sample, e.g. 60:240.")
@click.option("--strict", is_flag=True, help="Exit 1 when any file produced a warning.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@_jobs
def build(paths: tuple[Path, ...], output: Path, html_out: Path | None, title: str | None,
          gpu_override: str | None, peaks_file: Path | None, top_n: int, window: str | None,
          strict: bool, quiet: bool, jobs: int | None) -> None:
    """Build the HTML/PDF report from logs."""
    from roofreport.report import (  # heavy imports only when rendering
        ReportOptions,
        build_report,
    )

    if output.suffix.lower() not in (".pdf", ".html", ".htm"):
        _usage(f"-o must end in .pdf or .html, not {output.name!r}")
    _guard(lambda: check_not_input(output, paths))
    if html_out is not None:
        _guard(lambda: check_not_input(html_out, paths))
    options = _guard(lambda: ReportOptions.from_cli(
        title=title, gpu_override=gpu_override, peaks_file=peaks_file, top_n=top_n,
        window=window, inputs=list(paths)))
    dataset = _ingest(paths, jobs, quiet)
    written = _guard(lambda: build_report(dataset, output, html_out, options))
    if not quiet:
        _summary(dataset)
        for path in written:
            click.echo(f"wrote {path}", err=True)
    sys.exit(_exit_code(dataset, strict))


# -- helpers ---------------------------------------------------------------------------------

def _ingest(paths: tuple[Path, ...], jobs: int | None, quiet: bool) -> Dataset:
    progress = None
    if not quiet and sys.stderr.isatty():
        def progress(done: int, total: int, name: str) -> None:
            width = 28
            filled = int(width * done / max(total, 1))
            short = name if len(name) <= 40 else "…" + name[-39:]
            click.echo(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {short:<40}",
                       err=True, nl=False)
            if done == total:
                click.echo("", err=True)
    return _guard(lambda: ingest(list(paths), progress=progress, jobs=jobs))


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


def _exit_code(dataset: Dataset, strict: bool) -> int:
    if dataset.failed:
        return EXIT_FAILED
    if strict and dataset.warning_count:
        click.echo(f"roofreport: --strict: {dataset.warning_count} warning(s)", err=True)
        return EXIT_FAILED
    return EXIT_OK


def _summary(dataset: Dataset) -> None:
    counts: dict[str, int] = {}
    for f in dataset.files:
        counts[f.status] = counts.get(f.status, 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    click.echo(f"{len(dataset.files)} files: {parts}", err=True)
    for f in dataset.failed:
        click.echo(f"  {f.status}: {f.error}", err=True)
    if dataset.warning_count:
        click.echo(f"  {dataset.warning_count} warning(s); `roofreport inspect` lists them", err=True)


def _print_inspect(files: list[FileOutcome]) -> None:
    for f in files:
        rows = ", ".join(f"{n} {table}" for table, n in sorted(f.rows.items())) or "-"
        what = f"{f.family} {f.variant}" if f.family else "not a log"
        click.echo(f"{f.path}\n    {f.status}: {what}; rows: {rows}")
        if f.run:
            click.echo(f"    run: {f.run}")
        if f.error:
            click.echo("    " + f.error.replace("\n", "\n    "))
        for w in f.warnings[:20]:
            where = f" line {w.line}" if w.line else ""
            click.echo(f"    warning [{w.code}]{where}: {w.message.splitlines()[0]}")
        if len(f.warnings) > 20:
            click.echo(f"    ... and {len(f.warnings) - 20} more warnings")


def main() -> None:
    gc.freeze()  # what the imports made is never garbage: collections need not walk it
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("roofreport: interrupted", err=True)
        sys.exit(130)
