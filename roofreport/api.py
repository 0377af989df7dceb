"""roofreport as a library: read logs, analyze them, build the report.

    import roofreport

    data = roofreport.read("logs/")                  # every file under logs/, walked
    data.kernels, data.runs                          # polars DataFrames, fixed schemas
    [f for f in data.files if f.failed]              # what could not be read, and why
    analysis = roofreport.analyze(data, gpu="A100-SXM4-40GB")
    analysis.roofline                                # one frame per question the report answers
    roofreport.build_report(analysis, "report.pdf", html="report.html")

The CLI is a thin client of these four functions, so a script and `roofreport build` give the
same numbers. Bad input files never raise: their outcome is in `data.files`. Bad arguments raise
`roofreport.UsageError`; other failures `roofreport.RoofreportError`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING


from roofreport.errors import UsageError
from roofreport.families.common.limits import Limits
from roofreport.gpu import GpuSettings
from roofreport.pipeline import executors, store
from roofreport.pipeline.dataset import Dataset
from roofreport.pipeline.discover import check_not_input, check_writable, inside_input
from roofreport.pipeline.ingest import Progress, ingest
from roofreport.tables.output import TABLE_FORMATS, table_paths

if TYPE_CHECKING:
    from roofreport.analysis.bundle import Analysis, AnalysisSettings
    from roofreport.analysis.diff import Comparison
    from roofreport.analysis.summary import Summary
    from roofreport.analysis.view import View

PathLike = str | Path
Paths = PathLike | Iterable[PathLike]


def read(paths: Paths, *, gpu: str | None = None, peaks: PathLike | None = None, jobs: int | None = None,
         exclude: Iterable[str] = (), progress: bool | Progress = False, executor: str | None = None,
         dataset: PathLike | None = None, limits: Limits | None = None) -> Dataset:
    """Read every log under `paths` (files, or folders walked recursively) into a `Dataset`.

    `gpu`: the GPU every run ran on (a device name or GPU table key, `"A100-SXM4-40GB"`): it
    wins over what the logs and paths say (a logged name that disagrees is noted in the runs'
    `gpu_note`). `peaks`: a TSV/TOML file adding or correcting GPUs (their peaks apply wherever
    peaks are looked up). The runs' GPUs, labels and totals follow both.

    `jobs`: worker processes for many files (default one per core, up to 4; 1 reads in this
    process). Safe from a script without a main guard and from a notebook. `exclude`: globs of
    files to leave unread (matched against the path under the folder given, any trailing part
    of it, and the name). `progress`: True for a progress line on stderr, or a callable
    `(done, total, name)`. `executor`: where files are read: "local" (the default: worker
    processes here), "dask" (a Dask cluster started here, or the one at
    DASK_SCHEDULER_ADDRESS) or "dask://HOST:PORT" (the `roofreport[dask]` extra).

    `dataset`: a folder kept up to date with the logs (an incremental dataset: only new and
    changed files are read; `store.py`); the Dataset returned is read from it lazily, and
    `.update_report` says what was done. `paths` naming one such folder reads it (lazily), as it is.

    `limits`: what one input may cost (`Limits`: the unpacked size of a compressed file, the
    longest line kept, a worker's memory); a roofreport.toml beside the logs may lower them."""
    given = _paths(paths)
    if jobs is not None and jobs < 1:
        raise UsageError(f"jobs must be at least 1, not {jobs}")
    executors.check(executor)
    settings = gpu_settings(gpu=gpu, peaks=peaks)
    report = _stderr_progress if progress is True else (progress or None)
    folders = [p for p in given if p.is_dir() and store.is_dataset(p)]
    if folders:
        if len(given) > 1 or dataset is not None:
            raise UsageError(f"{folders[0]} is a roofreport dataset: read it alone")
        return _with_model(store.open_dataset(folders[0]))
    if dataset is not None:
        check_outputs([dataset], given)
        return _with_model(_updated(given, Path(dataset), exclude=tuple(exclude), jobs=jobs, executor=executor,
                                    progress=report, limits=limits or Limits(), settings=settings))
    return _with_totals(ingest(given, progress=report, jobs=jobs, exclude=tuple(exclude), executor=executor,
                               limits=limits or Limits(), settings=settings))


def read_file(path: PathLike, *, gpu: str | None = None, peaks: PathLike | None = None,
              limits: Limits | None = None) -> Dataset:
    """Read one log file into a `Dataset` (in this process, unless `limits` limit its memory);
    `gpu`, `peaks` as `read` takes them."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path} is not a file; use roofreport.read for folders")
    return _with_totals(ingest([file], jobs=1, limits=limits or Limits(), settings=gpu_settings(gpu=gpu, peaks=peaks)))


def analyze(data: Dataset | Paths, *, gpu: str | None = None, peaks: PathLike | None = None,
            top: int = 10, window: tuple[float, float] | str | None = None,
            model_flops: float | None = None, kernel: str | None = None,
            runs: str | Iterable[str] = (), baseline: Dataset | Paths | None = None) -> Analysis:
    """Every analysis the report uses, as frames (`Analysis`), from a `Dataset` or from paths
    (read first with `read`'s defaults).

    `gpu`, `peaks`: as `read` takes them; when they differ from those the dataset was read with,
    the runs' GPUs, labels and totals are worked out again, to the tables `read` would give with
    them. `top`: kernels listed per run. `window`: the utilization window in seconds from the
    first sample, `(60, 240)` or `"60:240"`. `model_flops`: the model FLOPs of one training step
    (MFU's numerator), instead of the FLOPs counted from a PyTorch trace's shapes. `kernel` (a regex) and `runs` (globs over run ids and labels)
    narrow what the frames show, never the run totals (`analysis/view.py`). `baseline` (a Dataset
    or paths): the runs shown are compared with its runs (`Analysis.baseline`, as `compare(baseline,
    data)` gives it; the report's section "Against the baseline")."""
    dataset = data if isinstance(data, Dataset) else read(data)
    return _analyze(dataset, analysis_settings(gpu=gpu, peaks=peaks, top=top, window=window,
                                               model_flops=model_flops, kernel=kernel, runs=runs),
                    _baseline(baseline))


def summary(data: Dataset | Paths, *, kernel: str | None = None, runs: str | Iterable[str] = (),
            top: int = 10) -> Summary:
    """What `roofreport summary` prints, as frames (`Summary`: `.runs`, `.categories`,
    `.kernels`): the runs, their kernel categories and their `top` kernels, narrowed to the
    kernels matching `kernel` (a regex) and the runs matching `runs` (globs); run totals count
    every kernel."""
    from roofreport.analysis.bundle import dataset_model
    from roofreport.analysis.summary import summarize

    dataset = data if isinstance(data, Dataset) else read(data)
    return summarize(dataset_model(dataset), view(kernel=kernel, runs=runs), top=top)


def compare(baseline: Dataset | Paths, other: Dataset | Paths | None = None, *, runs_a: str | Iterable[str] = (),
            runs_b: str | Iterable[str] = ()) -> Comparison:
    """What changed from `baseline` (A) to `other` (B), per category and per kernel, as frames
    (`Comparison`: `.pairs`, `.unpaired`, `.totals`, `.categories`, `.kernels`;
    analysis/diff.py). Both are Datasets or paths (read with `read`'s defaults); `other`
    None compares runs of `baseline` with each other, chosen by `runs_a` and `runs_b` (globs over run
    ids and labels). One run on each side is compared as it is; several pair by workload."""
    from roofreport import gpu
    from roofreport.analysis.bundle import dataset_model
    from roofreport.analysis.diff import compare as compare_runs

    if other is None and not (runs_a and runs_b):
        raise UsageError("to compare runs of one folder, choose each side's runs (runs_a and runs_b; "
                         "--run-a and --run-b)")
    first = baseline if isinstance(baseline, Dataset) else read(baseline)
    second = first if other is None else other if isinstance(other, Dataset) else read(other)
    return compare_runs(dataset_model(first), dataset_model(second), runs_a=view(runs=runs_a),
                        runs_b=view(runs=runs_b), db=gpu.load_database())


def view(*, kernel: str | None = None, runs: str | Iterable[str] = ()) -> View:
    """The runs and kernels to show (`--kernel REGEX`, `--run GLOB`), checked: a regex that
    does not compile is a UsageError."""
    from roofreport.analysis.view import View

    return View(kernel=kernel, runs=(runs,) if isinstance(runs, str) else tuple(runs))


def build_report(source: Dataset | Analysis | Paths, output: PathLike, *, html: PathLike | None = None,
                 title: str | None = None, gpu: str | None = None, peaks: PathLike | None = None,
                 top: int = 10, window: tuple[float, float] | str | None = None,
                 model_flops: float | None = None, kernel: str | None = None, runs: str | Iterable[str] = (),
                 baseline: Dataset | Paths | None = None, jobs: int | None = None, exclude: Iterable[str] = (),
                 progress: bool | Progress = False, executor: str | None = None,
                 json_summary: PathLike | None = None, limits: Limits | None = None) -> list[Path]:
    """Write the report of `source` (paths, a `Dataset` or an `Analysis`) to `output` (.pdf or
    .html) and, when given, the HTML to `html` and what page 1 says to `json_summary` (findings,
    speedups with their reasons, per-run totals: `report/summary_json.py`); returns the paths
    written. Each file is written atomically and never over an input. The analysis settings (`gpu`, `peaks`, `top`, `window`,
    `model_flops`, `kernel`, `runs`) and `baseline` (a Dataset or paths: a section compares the
    runs with its runs) apply when `source` is not already an `Analysis`; the reading ones (`jobs`, `exclude`,
    `progress`, `executor`, `limits`) when it is paths (a dataset folder among them is read as it is),
    and to a `baseline` given as paths (as `roofreport build --baseline` reads it)."""
    from roofreport.report import build_report as render  # matplotlib and WeasyPrint: only here

    output_path = Path(output)
    html_path = Path(html) if html is not None else None
    json_path = Path(json_summary) if json_summary is not None else None
    from roofreport.analysis.bundle import Analysis, AnalysisSettings

    settings = analysis_settings(gpu=gpu, peaks=peaks, top=top, window=window, model_flops=model_flops,
                                 kernel=kernel, runs=runs)
    if isinstance(source, Analysis):
        if settings != AnalysisSettings() or baseline is not None:
            raise UsageError("an Analysis was given: pass gpu, peaks, top, window, model_flops, kernel, runs "
                             "and baseline to analyze()")
        inputs = source.dataset.inputs
    else:
        inputs = source.inputs if isinstance(source, Dataset) else _paths(source)
    baseline_inputs = [] if baseline is None else baseline.inputs if isinstance(baseline, Dataset) \
        else _paths(baseline)
    read_from = [*_as_paths(inputs), *baseline_inputs]
    check_outputs([output_path, html_path], read_from, report=True)
    check_outputs([json_path], read_from)
    if isinstance(source, Analysis):
        analysis = source
    else:
        dataset = source if isinstance(source, Dataset) else read(
            inputs, gpu=gpu, peaks=peaks, jobs=jobs, exclude=exclude, progress=progress, executor=executor,
            limits=limits)
        against = baseline if baseline is None or isinstance(baseline, Dataset) else read(
            baseline, jobs=jobs, exclude=exclude, progress=progress, executor=executor, limits=limits)
        analysis = _analyze(dataset, settings, against)
    return render(analysis, output_path, html_path, title, json_path)


def analysis_settings(*, gpu: str | None = None, peaks: PathLike | None = None, top: int = 10,
                      window: tuple[float, float] | str | None = None,
                      model_flops: float | None = None, kernel: str | None = None,
                      runs: str | Iterable[str] = ()) -> AnalysisSettings:
    """The analysis settings `analyze` and `build_report` take, checked (a UsageError names
    what is wrong): a window as `(60, 240)` or `"60:240"`, a peaks file that exists, a kernel
    regex that compiles."""
    from roofreport.analysis.bundle import AnalysisSettings, parse_window

    span = parse_window(window) if isinstance(window, str) else (tuple(window) if window else None)
    return AnalysisSettings(gpu=gpu_settings(gpu=gpu, peaks=peaks), top=top, window=span, model_flops=model_flops,
                            view=view(kernel=kernel, runs=runs))


def gpu_settings(*, gpu: str | None = None, peaks: PathLike | None = None) -> GpuSettings:
    """What the user says of the GPU, checked: a peaks file that exists and reads, a GPU name
    that names one GPU of the table or the peaks file (`GpuDatabase.chosen`: a product's default
    variant stands in, marked assumed), else a UsageError with the closest names."""
    peaks_path = Path(peaks) if peaks is not None else None
    if peaks_path is not None and not peaks_path.is_file():
        raise UsageError(f"peaks file {peaks} does not exist")
    if gpu is not None and not str(gpu).strip():
        raise UsageError("--gpu needs a GPU name")
    settings = GpuSettings(gpu=str(gpu).strip() if gpu else None, peaks=peaks_path)
    settings.database()     # a peaks file that does not read fails here, before any log is read
    unknown = settings.unknown()
    if unknown:             # a GPU name with no peaks: before any log is read, with what was meant
        raise UsageError(f"--gpu {unknown}")
    return settings


def check_outputs(outputs: Iterable[PathLike | None], inputs: Paths, report: bool = False) -> None:
    """Refuse outputs that would overwrite an input (or a log inside an input folder), that
    cannot be written (permissions, a read-only filesystem) and, with `report`, report files not
    ending in .pdf or .html: a UsageError before anything is read."""
    given = _as_paths(inputs)
    for output in outputs:
        if output is None:
            continue
        target = Path(output)
        if report and target.suffix.lower() not in (".pdf", ".html", ".htm"):
            raise UsageError(f"the report must end in .pdf or .html, not {target.name!r}")
        check_not_input(target, given)
        check_writable(target)


def outputs_inside_inputs(outputs: Iterable[PathLike | None], inputs: Paths) -> list[tuple[Path, Path]]:
    """(output, input folder) for each output inside an input folder: allowed, but the next
    read of that folder finds it (the CLI warns)."""
    given = _as_paths(inputs)
    found = [(Path(o), inside_input(Path(o), given)) for o in outputs if o is not None]
    return [(output, folder) for output, folder in found if folder is not None]


def table_files(folder: PathLike, format: str = "parquet") -> list[Path]:
    """The files `Dataset.write(folder, format)` writes, one per table."""
    return table_paths(Path(folder), format)


# -- helpers ---------------------------------------------------------------------------------

def _as_paths(paths: Paths) -> list[Path]:
    return [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]


def _paths(paths: Paths) -> list[Path]:
    """A str or Path, or several; each must exist."""
    given = _as_paths(paths)
    if not given:
        raise UsageError("no paths given")
    missing = [str(p) for p in given if not p.exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    return given


def _with_totals(dataset: Dataset) -> Dataset:
    """The dataset with its model (`roofreport.model`, derived with the dataset's peaks and
    kept: `analyze`, `summary`, `compare` and the report read it), the runs table with the
    model's run totals (kernel time, FLOPs, bytes, intensity, bound...), the kernels with
    `in_run_total`, and the steps table with its MFU, HFU and outliers (analysis/steps.py), so
    `parse`, `read`, `analyze` and the report all read the same numbers."""
    from roofreport.model import derive

    model = derive(dataset.tables, dataset.gpu.database())
    dataset.tables["runs"] = model.runs()
    dataset.tables["kernels"] = model.kernels()
    dataset.model = model
    return _with_step_metrics(dataset)


def _with_model(dataset: Dataset) -> Dataset:
    """A dataset folder's Dataset with its model (`_with_totals`), kept lazy: its kernels get
    `in_run_total` as they are scanned, and nothing is derived until asked for."""
    from roofreport.model import batches, derive
    from roofreport.tables.lazy import LazyTables

    model = derive(dataset.tables, dataset.gpu.database(), batches.stored_partials(dataset.generation))
    if isinstance(dataset.tables, LazyTables) and "kernels" in dataset.tables:
        dataset.tables = dataset.tables.filtered(
            lambda name, scan: model.kernels_scan(scan) if name == "kernels" else scan)
    dataset.model = model
    return _with_step_metrics(dataset)


def _with_step_metrics(dataset: Dataset) -> Dataset:
    """The steps table with its MFU, HFU and outliers (a dataset folder stores the steps as
    read: they are worked out when it is read, from its runs), with the dataset's peaks."""
    if dataset.tables["steps"].height:
        from roofreport.analysis.steps import with_step_metrics

        dataset.tables["steps"] = with_step_metrics(dataset.tables, dataset.gpu.database())
    return dataset


def _updated(paths: list[Path], folder: Path, settings: GpuSettings, **options) -> Dataset:
    """The dataset folder brought up to date (`store.prepare_update`), with the run totals the
    model combines from its batches' partials (`model.batches`) written before it is switched
    to: ingest writes the tables, the model its totals, nothing flows back."""
    from roofreport.model import batches

    with store.prepare_update(paths, folder, settings=settings, **options) as pending:
        return pending.commit(batches.runs_table(pending, settings.database()))


def _analyze(dataset: Dataset, settings: AnalysisSettings, baseline: Dataset | None = None) -> Analysis:
    from roofreport.analysis.bundle import analyze  # (analysis modules load on first use)

    return analyze(dataset, settings, baseline)


def _baseline(baseline: Dataset | Paths | None) -> Dataset | None:
    """A baseline to compare with, read with `read`'s defaults when given as paths (its own
    GPUs: a --gpu of the runs compared does not apply to it)."""
    return baseline if baseline is None or isinstance(baseline, Dataset) else read(baseline)


def _stderr_progress(done: int, total: int, name: str) -> None:
    """A one-line progress bar on stderr, redrawn in place."""
    width = 28
    filled = int(width * done / max(total, 1))
    short = name if len(name) <= 40 else "…" + name[-39:]
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {short:<40}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


__all__ = ["TABLE_FORMATS", "Dataset", "analysis_settings", "analyze", "build_report", "check_outputs", "compare",
           "gpu_settings", "outputs_inside_inputs", "read", "read_file", "summary", "table_files", "view"]
