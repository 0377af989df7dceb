"""GPU identity, in one place: the GPU table, the one token table, architecture hints in kernel
names, compute capabilities, and the resolver every layer asks which GPU a run ran on.

* `specs.py`: a GPU's datasheet values (`GpuSpec`) and the table's columns;
* `names.py`: how device names, cut names and path tokens are compared (the one token table,
  `data/gpu_tokens.tsv`, which run identity also reads paths with);
* `architectures.py`: compute capabilities compared, kernel-name hints (a lower bound);
* `database.py`: the table and a user's additions (`GpuDatabase`, `load_database`);
* `evidence.py`: the values every layer passes: the user's `GpuSettings` (from the CLI down), a
  run's `Evidence`, the resolver's answer `GpuIdentity`;
* `resolve.py`: `Evidence` -> `GpuIdentity` (`resolve`, `override`): every piece weighed once.

A leaf: it imports no layer of roofreport (pyproject.toml's import contracts).
"""

from roofreport.gpu.architectures import kernel_hint
from roofreport.gpu.database import GpuDatabase, load_database, match, unknown_gpu
from roofreport.gpu.evidence import (
    CC,
    CPU,
    CPU_LABEL,
    LOG,
    NO_SETTINGS,
    NOT_NAMED,
    PATH,
    USER,
    Evidence,
    GpuIdentity,
    GpuSettings,
)
from roofreport.gpu.names import not_another_gpu, token_alternatives
from roofreport.gpu.resolve import from_logs, override, resolve
from roofreport.gpu.specs import PRECISIONS, GpuSpec, spec_from_row

__all__ = [
    "CC",
    "CPU",
    "CPU_LABEL",
    "LOG",
    "NOT_NAMED",
    "NO_SETTINGS",
    "PATH",
    "PRECISIONS",
    "USER",
    "Evidence",
    "GpuDatabase",
    "GpuIdentity",
    "GpuSettings",
    "GpuSpec",
    "from_logs",
    "kernel_hint",
    "load_database",
    "match",
    "not_another_gpu",
    "override",
    "resolve",
    "spec_from_row",
    "token_alternatives",
]
