"""roofreport: offline analysis of GPU profiler logs (Nsight Compute, Nsight Systems, nvprof,
nvidia-smi, PyTorch profiler) into shared polars tables, roofline analyses and an HTML/PDF report.

    import roofreport
    data = roofreport.read("logs/")                      # -> Dataset: data.kernels, data.runs, ...
    analysis = roofreport.analyze(data)                  # -> Analysis: every frame the report shows
    roofreport.build_report(analysis, "report.pdf")
    roofreport.summary(data).kernels                     # the top kernels per run, as `roofreport summary`
    roofreport.compare("v100/", "a100/").categories      # what changed, as `roofreport compare`

See `roofreport.api` for the arguments. Importing roofreport leaves the caller's process as it
was (no environment variable set, nothing frozen): the process-wide settings of
`roofreport.tuning` are the command's own (`roofreport.__main__`). The names below load on
first use, so that the command applies its settings before polars is first imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofreport.errors import ParseError, RenderError, RoofreportError, UsageError
from roofreport.version import __version__

if TYPE_CHECKING:
    from roofreport.analysis.bundle import Analysis, AnalysisSettings
    from roofreport.api import Dataset, analyze, build_report, compare, read, read_file, summary
    from roofreport.families.common.limits import Limits
    from roofreport.api import read_options
    from roofreport.pipeline.dataset import FileOutcome
    from roofreport.pipeline.options import ReadOptions

# Each name, and the module it comes from (imported on first use, `__getattr__`).
_LAZY = {
    "Analysis": "roofreport.analysis.bundle", "AnalysisSettings": "roofreport.analysis.bundle",
    "Dataset": "roofreport.api", "analyze": "roofreport.api", "build_report": "roofreport.api",
    "compare": "roofreport.api", "read": "roofreport.api", "read_file": "roofreport.api",
    "summary": "roofreport.api", "Limits": "roofreport.families.common.limits",
    "FileOutcome": "roofreport.pipeline.dataset", "ReadOptions": "roofreport.pipeline.options",
    "read_options": "roofreport.api",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value   # once: later look-ups are plain attribute reads
        return value
    raise AttributeError(f"module 'roofreport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["Analysis", "AnalysisSettings", "Dataset", "FileOutcome", "Limits", "ParseError", "ReadOptions", "RenderError",
           "RoofreportError", "UsageError", "__version__", "analyze", "build_report", "compare", "read",
           "read_file", "read_options", "summary"]
