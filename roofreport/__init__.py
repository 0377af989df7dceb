"""roofreport: offline analysis of GPU profiler logs (Nsight Compute, Nsight Systems, nvprof,
nvidia-smi) into shared polars tables, roofline analyses and an HTML/PDF report."""

__version__ = "0.1.0"
