"""roofreport: offline analysis of GPU profiler logs (Nsight Compute, Nsight Systems, nvprof,
nvidia-smi) into shared polars tables, roofline analyses and an HTML/PDF report."""

from roofreport.version import __version__

__all__ = ["__version__"]
