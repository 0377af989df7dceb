"""What kernel names tell, as the layers above the model read it.

Each fact is defined once, where names are read at ingest (`enrich/names.py`: the phases a
name tells; `enrich/categories.py` and `data/kernel_categories.tsv`: the categories); the
analyses ask here, never `enrich` (the import contract in pyproject.toml):

* `PHASE_NAMES` and `phase_of`: forward, backward or optimizer as a kernel name tells;
* `OTHER_CATEGORY`: the category of a kernel no rule names;
* `communication_pattern()`: the regex of collective-communication kernels (NCCL...), the
  categories' own rule.
"""

from __future__ import annotations

from functools import lru_cache

from roofreport.enrich import categories
from roofreport.enrich.names import PHASES, phase_of

PHASE_NAMES = tuple(phase for phase, _ in PHASES)   # optimizer, backward, forward
OTHER_CATEGORY = categories.OTHER


@lru_cache(maxsize=1)
def communication_pattern() -> str:
    """The shipped categories' rule for communication kernels (a regex opening with `(?i)`)."""
    return dict(categories.default_rules())["communication"]


__all__ = ["OTHER_CATEGORY", "PHASE_NAMES", "communication_pattern", "phase_of"]
