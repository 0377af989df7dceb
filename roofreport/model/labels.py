"""Run labels as the layers above the model read them: `pipeline/labels.py` makes each run's
label at ingest (model · GPU · the parameters that vary) and is the one place their rules live;
the analyses ask here for its vocabulary (the separator, the parameters that say how a run was
launched rather than what it did, how a parameter reads and in which order, a job's name less the
size a folder-named job carries), never `pipeline`
(the import contract in pyproject.toml)."""

from __future__ import annotations

from roofreport.pipeline.labels import LAUNCH_ONLY, SEPARATOR, describe, job_base, lead, param_order

__all__ = ["LAUNCH_ONLY", "SEPARATOR", "describe", "job_base", "lead", "param_order"]
