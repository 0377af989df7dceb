"""roofreport: offline analysis of GPU profiler logs (Nsight Compute, Nsight Systems, nvprof,
nvidia-smi, PyTorch profiler) into shared polars tables, roofline analyses and an HTML/PDF report.

    import roofreport
    data = roofreport.read("logs/")                      # -> Dataset: data.kernels, data.runs, ...
    analysis = roofreport.analyze(data)                  # -> Analysis: every frame the report shows
    roofreport.build_report(analysis, "report.pdf")
    roofreport.summary(data).kernels                     # the top kernels per run, as `roofreport summary`
    roofreport.compare("v100/", "a100/").categories      # what changed, as `roofreport compare`

See `roofreport.api` for the arguments. Importing roofreport applies the process-wide settings
of `roofreport.tuning` (an allocator setting, a garbage-collector freeze; `ROOFREPORT_TUNING=0`
turns them off).
"""

from roofreport import tuning

tuning.before_imports()

from roofreport.api import Dataset, analyze, build_report, compare, read, read_file, summary  # noqa: E402
from roofreport.errors import ParseError, RenderError, RoofreportError, UsageError  # noqa: E402
from roofreport.families.common.limits import Limits  # noqa: E402
from roofreport.pipeline.dataset import FileOutcome  # noqa: E402
from roofreport.version import __version__  # noqa: E402

tuning.after_imports()

_LAZY = {"Analysis", "AnalysisSettings"}  # the analysis modules load on first use


def __getattr__(name: str):
    if name in _LAZY:
        from roofreport.analysis import bundle

        return getattr(bundle, name)
    raise AttributeError(f"module 'roofreport' has no attribute {name!r}")


__all__ = ["Analysis", "AnalysisSettings", "Dataset", "FileOutcome", "Limits", "ParseError", "RenderError",
           "RoofreportError", "UsageError", "__version__", "analyze", "build_report", "compare", "read",
           "read_file", "summary"]
