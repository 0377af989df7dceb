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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING


from roofreport.errors import UsageError
from roofreport.families.common.limits import Limits
from roofreport.gpu import GpuSettings
from roofreport.pipeline import executors, store
from roofreport.pipeline.dataset import Dataset
from roofreport.pipeline.discover import check_not_input, check_writable, inside_input
from roofreport.pipeline.ingest import ingest
from roofreport.pipeline.options import Progress, ReadOptions
from roofreport.tables.output import TABLE_FORMATS, table_paths

if TYPE_CHECKING:
    from roofreport.analysis.bundle import Analysis, AnalysisSettings
    from roofreport.analysis.diff import Comparison
    from roofreport.analysis.summary import Summary
    from roofreport.analysis.view import View

PathLike = str | Path
Paths = PathLike | Iterable[PathLike]


def read(paths: Paths | ReadOptions, *, gpu: str | None = None, peaks: PathLike | None = None,
         jobs: int | None = None, exclude: Iterable[str] = (), progress: bool | Progress = False,
         executor: str | None = None, dataset: PathLike | None = None, limits: Limits | None = None) -> Dataset:
    """Read every log under `paths` (files, or folders walked recursively) into a `Dataset`;
    `paths` may instead be a `ReadOptions` saying all of the below (`read_options` builds one).

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
    if isinstance(paths, ReadOptions):
        if (gpu, peaks, jobs, tuple(exclude), progress, executor, dataset, limits) != \
                (None, None, None, (), False, None, None, None):
            raise UsageError("ReadOptions given: put every reading option in it, not beside it")
        return _read(paths)
    return _read(read_options(paths, gpu=gpu, peaks=peaks, jobs=jobs, exclude=exclude, progress=progress,
                              executor=executor, dataset=dataset, limits=limits))


def read_options(paths: Paths = (), *, gpu: str | None = None, peaks: PathLike | None = None,
                 jobs: int | None = None, exclude: Iterable[str] = (), progress: bool | Progress = False,
                 executor: str | None = None, dataset: PathLike | None = None,
                 limits: Limits | None = None) -> ReadOptions:
    """The `ReadOptions` `read` takes, checked (a UsageError names what is wrong): paths that
    exist (none: for paths given later, `ReadOptions.reading`), a known executor, jobs >= 1,
    the GPU settings (`gpu_settings`). The arguments as `read` takes them."""
    listed = _as_paths(paths)
    given = tuple(_paths(listed)) if listed else ()
    executors.check(executor)
    return ReadOptions(paths=given, exclude=tuple(exclude), limits=limits or Limits(), executor=executor,
                       jobs=jobs, gpu=gpu_settings(gpu=gpu, peaks=peaks),
                       progress=_stderr_progress if progress is True else (progress or None),
                       dataset=Path(dataset) if dataset is not None else None)


def _read(options: ReadOptions) -> Dataset:
    """Read what `options` say (see `read`)."""
    given = list(_paths(options.paths))
    folders = [p for p in given if p.is_dir() and store.is_dataset(p)]
    if folders:
        if len(given) > 1 or options.dataset is not None:
            raise UsageError(f"{folders[0]} is a roofreport dataset: read it alone")
        return _with_model(store.open_dataset(folders[0]))
    if options.dataset is not None:
        check_outputs([options.dataset], given)
        return _with_model(_updated(given, Path(options.dataset), exclude=options.exclude, jobs=options.jobs,
                                    executor=options.executor, progress=options.progress, limits=options.limits,
                                    settings=options.gpu))
    return _with_totals(ingest(given, progress=options.progress, jobs=options.jobs, exclude=options.exclude,
                               executor=options.executor, limits=options.limits, settings=options.gpu))


def _dataset(data: Dataset | Paths, reading: ReadOptions | None) -> Dataset:
    """`data` itself, or the logs at paths `data` read with `reading` (else `read`'s defaults)."""
    if isinstance(data, Dataset):
        return data
    return _read((reading or ReadOptions()).reading(_paths(data)))


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
            runs: str | Iterable[str] = (), baseline: Dataset | Paths | None = None,
            reading: ReadOptions | None = None) -> Analysis:
    """Every analysis the report uses, as frames (`Analysis`), from a `Dataset` or from paths
    (read first with `reading`, a `ReadOptions`; else `read`'s defaults).

    `gpu`, `peaks`: as `read` takes them; when they differ from those the dataset was read with,
    the runs' GPUs, labels and totals are worked out again, to the tables `read` would give with
    them. `top`: kernels listed per run. `window`: the utilization window in seconds from the
    first sample, `(60, 240)` or `"60:240"`. `model_flops`: the model FLOPs of one training step
    (MFU's numerator), instead of the FLOPs counted from a PyTorch trace's shapes. `kernel` (a regex) and `runs` (globs over run ids and labels)
    narrow what the frames show, never the run totals (`analysis/view.py`). `baseline` (a Dataset
    or paths, read with `reading` as `ReadOptions.for_baseline` says): the runs shown are compared
    with its runs (`Analysis.baseline`, as `compare(baseline, data)` gives it; the report's section
    "Against the baseline")."""
    settings = analysis_settings(gpu=gpu, peaks=peaks, top=top, window=window, model_flops=model_flops,
                                 kernel=kernel, runs=runs)
    dataset = _dataset(data, reading or ReadOptions(gpu=settings.gpu))
    return _analyze(dataset, settings, _baseline(baseline, reading))


def summary(data: Dataset | Paths, *, kernel: str | None = None, runs: str | Iterable[str] = (),
            top: int = 10, reading: ReadOptions | None = None) -> Summary:
    """What `roofreport summary` prints, as frames (`Summary`: `.runs`, `.categories`,
    `.kernels`): the runs, their kernel categories and their `top` kernels, narrowed to the
    kernels matching `kernel` (a regex) and the runs matching `runs` (globs); run totals count
    every kernel. `data` given as paths is read with `reading` (a `ReadOptions`; else `read`'s
    defaults)."""
    from roofreport.analysis.bundle import dataset_model
    from roofreport.analysis.summary import summarize

    shown = view(kernel=kernel, runs=runs)
    return summarize(dataset_model(_dataset(data, reading)), shown, top=top)


def compare(baseline: Dataset | Paths, other: Dataset | Paths | None = None, *, runs_a: str | Iterable[str] = (),
            runs_b: str | Iterable[str] = (), reading: ReadOptions | None = None) -> Comparison:
    """What changed from `baseline` (A) to `other` (B), per category and per kernel, as frames
    (`Comparison`: `.pairs`, `.unpaired`, `.totals`, `.categories`, `.kernels`;
    analysis/diff.py). Both are Datasets or paths (read with `reading`, a `ReadOptions`: both
    sides with its GPU settings, as `roofreport compare --gpu` reads them; else `read`'s defaults); `other`
    None compares runs of `baseline` with each other, chosen by `runs_a` and `runs_b` (globs over run
    ids and labels). One run on each side is compared as it is; several pair by workload."""
    from roofreport import gpu
    from roofreport.analysis.bundle import dataset_model
    from roofreport.analysis.diff import compare as compare_runs

    if other is None and not (runs_a and runs_b):
        raise UsageError("to compare runs of one folder, choose each side's runs (runs_a and runs_b; "
                         "--run-a and --run-b)")
    first = _dataset(baseline, reading)
    second = first if other is None else _dataset(other, reading)
    return compare_runs(dataset_model(first), dataset_model(second), runs_a=view(runs=runs_a),
                        runs_b=view(runs=runs_b), db=gpu.load_database())


def view(*, kernel: str | None = None, runs: str | Iterable[str] = ()) -> View:
    """The runs and kernels to show (`--kernel REGEX`, `--run GLOB`), checked: a regex that
    does not compile is a UsageError."""
    from roofreport.analysis.view import View

    return View(kernel=kernel, runs=(runs,) if isinstance(runs, str) else tuple(runs))


@dataclass(frozen=True)
class BuildSteps:
    """What `build_report` tells its caller as it goes (the CLI prints from it); each optional.
    `read(dataset, baseline)`: a dataset was read from paths, the logs' (`baseline` False) or
    the baseline's (True); `analysing(dataset)`: the analyses start; `rendering()`: the report
    renders."""

    read: Callable[[Dataset, bool], None] | None = None
    analysing: Callable[[Dataset], None] | None = None
    rendering: Callable[[], None] | None = None


def build_report(source: Dataset | Analysis | Paths | ReadOptions, output: PathLike, *,
                 html: PathLike | None = None, title: str | None = None, gpu: str | None = None,
                 peaks: PathLike | None = None, top: int = 10, window: tuple[float, float] | str | None = None,
                 model_flops: float | None = None, kernel: str | None = None, runs: str | Iterable[str] = (),
                 baseline: Dataset | Paths | None = None, jobs: int | None = None, exclude: Iterable[str] = (),
                 progress: bool | Progress = False, executor: str | None = None,
                 json_summary: PathLike | None = None, limits: Limits | None = None,
                 steps: BuildSteps | None = None) -> list[Path]:
    """Write the report of `source` (paths, a `ReadOptions` saying which paths and how to read
    them, a `Dataset` or an `Analysis`) to `output` (.pdf or .html) and, when given, the HTML to
    `html` and what page 1 says to `json_summary` (findings, speedups with their reasons,
    per-run totals: `report/summary_json.py`); returns the paths written. Each file is written
    atomically and never over an input; bad options, outputs and a PDF writer that cannot load
    fail before anything is read. The analysis settings (`gpu`, `peaks`, `top`, `window`,
    `model_flops`, `kernel`, `runs`) and `baseline` (a Dataset or paths: a section compares the
    runs with its runs) apply when `source` is not already an `Analysis`; the reading ones
    (`jobs`, `exclude`, `progress`, `executor`, `limits`, or a `ReadOptions` holding them and
    the GPU settings) when it is paths (a dataset folder among them is read as it is), and to a
    `baseline` given as paths (`ReadOptions.for_baseline`). `roofreport build` is this
    function; `steps` (`BuildSteps`) tell it what is done as it goes."""
    from roofreport.analysis.bundle import Analysis, AnalysisSettings
    from roofreport.report import build_report as render  # matplotlib and WeasyPrint: only here

    steps = steps or BuildSteps()
    output_path = Path(output)
    html_path = Path(html) if html is not None else None
    json_path = Path(json_summary) if json_summary is not None else None
    if isinstance(source, ReadOptions):
        if (gpu, peaks, jobs, tuple(exclude), progress, executor, limits) != (None, None, None, (), False, None, None):
            raise UsageError("ReadOptions given: put gpu, peaks, jobs, exclude, progress, executor and limits in it")
        reading = source
    else:
        reading = read_options(gpu=gpu, peaks=peaks, jobs=jobs, exclude=exclude, progress=progress,
                               executor=executor, limits=limits)
    settings = analysis_settings(top=top, window=window, model_flops=model_flops, kernel=kernel, runs=runs,
                                 gpus=reading.gpu)
    if isinstance(source, Analysis):
        if settings != AnalysisSettings() or baseline is not None:
            raise UsageError("an Analysis was given: pass gpu, peaks, top, window, model_flops, kernel, runs "
                             "and baseline to analyze()")
        inputs = source.dataset.inputs
    elif isinstance(source, ReadOptions):
        inputs = _paths(source.paths)
    else:
        inputs = source.inputs if isinstance(source, Dataset) else _paths(source)
    baseline_inputs = [] if baseline is None else baseline.inputs if isinstance(baseline, Dataset) \
        else _paths(baseline)
    read_from = [*_as_paths(inputs), *baseline_inputs]
    check_outputs([output_path, html_path], read_from, report=True)
    check_outputs([json_path], read_from)
    if output_path.suffix.lower() == ".pdf":    # a PDF writer without its system libraries: said now
        from roofreport.report.render import check_pdf_writer

        check_pdf_writer(output_path)
    if isinstance(source, Analysis):
        analysis = source
    else:
        dataset = source if isinstance(source, Dataset) else _read(
            source if isinstance(source, ReadOptions) else reading.reading(inputs))   # (a dataset folder kept too)
        if steps.read and not isinstance(source, Dataset):
            steps.read(dataset, False)
        against = baseline if baseline is None or isinstance(baseline, Dataset) else _baseline(baseline, reading)
        if steps.read and against is not None and not isinstance(baseline, Dataset):
            steps.read(against, True)
        if steps.analysing:
            steps.analysing(dataset)
        analysis = _analyze(dataset, settings, against)
    if steps.rendering:
        steps.rendering()
    return render(analysis, output_path, html_path, title, json_path)


def analysis_settings(*, gpu: str | None = None, peaks: PathLike | None = None, top: int = 10,
                      window: tuple[float, float] | str | None = None,
                      model_flops: float | None = None, kernel: str | None = None,
                      runs: str | Iterable[str] = (), gpus: GpuSettings | None = None) -> AnalysisSettings:
    """The analysis settings `analyze` and `build_report` take, checked (a UsageError names
    what is wrong): a window as `(60, 240)` or `"60:240"`, a peaks file that exists, a kernel
    regex that compiles. `gpus`: GPU settings already checked (a `ReadOptions`'), instead of
    `gpu` and `peaks`."""
    from roofreport.analysis.bundle import AnalysisSettings, parse_window

    span = parse_window(window) if isinstance(window, str) else (tuple(window) if window else None)
    if gpus is None:
        gpus = gpu_settings(gpu=gpu, peaks=peaks)
    elif gpu is not None or peaks is not None:
        raise UsageError("give the GPU settings once: gpu and peaks, or gpus (GpuSettings)")
    return AnalysisSettings(gpu=gpus, top=top, window=span, model_flops=model_flops,
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


def one_batch(paths: Paths) -> bool:
    """The logs under `paths` make one batch of a dataset folder (`store.one_batch`): `parse`
    reads them in memory, as a batch of a spooled read would be held whole anyway."""
    return store.one_batch(_paths(paths))


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


def _baseline(baseline: Dataset | Paths | None, reading: ReadOptions | None) -> Dataset | None:
    """A baseline to compare with, read when given as paths with `reading` as
    `ReadOptions.for_baseline` says (its own GPUs: a --gpu of the runs compared does not apply
    to it), else `read`'s defaults."""
    if baseline is None or isinstance(baseline, Dataset):
        return baseline
    return _read((reading or ReadOptions()).for_baseline(_paths(baseline)))


def _stderr_progress(done: int, total: int, name: str) -> None:
    """A one-line progress bar on stderr, redrawn in place."""
    width = 28
    filled = int(width * done / max(total, 1))
    short = name if len(name) <= 40 else "…" + name[-39:]
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {short:<40}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


__all__ = ["TABLE_FORMATS", "BuildSteps", "Dataset", "ReadOptions", "analysis_settings", "analyze", "build_report", "check_outputs", "compare",
           "gpu_settings", "outputs_inside_inputs", "read", "read_file", "read_options", "summary", "table_files", "view"]
