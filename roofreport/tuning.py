"""Process-wide settings that make roofreport faster or leaner, in one place, applied the same
way by the CLI and the library: `import roofreport` calls `before_imports` before polars is
first imported and `after_imports` once roofreport's modules are loaded.

Each is kept because `make bench` / the measurements in benchmarks/README.md show it earns at
least 10 %:

* polars' allocator (jemalloc) returns memory it freed to the system within 200 ms, from a
  background thread, instead of keeping it for the rest of the process: the peak memory of a
  400 MB trace's parse is ~120-160 MB lower, at the same CPU time. polars reads the variable
  when it is first imported, so a program that imported polars before roofreport keeps its own
  allocator settings; a value the user set always wins.
* The objects alive once roofreport and polars are imported (some 10^5 modules, classes,
  functions and constants, which live as long as the process) are frozen out of the cyclic
  garbage collector (`gc.freeze`), which would otherwise walk them on every full collection:
  a small file's `roofreport parse` takes ~20 % less CPU (0.29 vs 0.36 s, median of 12).

`ROOFREPORT_TUNING=0` in the environment turns both off.
"""

from __future__ import annotations

import gc
import os

ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
ALLOCATOR_CONF = "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0"


def _enabled() -> bool:
    return os.environ.get("ROOFREPORT_TUNING", "1") != "0"


def before_imports() -> None:
    """The allocator setting, unless the user set one (see the module docstring)."""
    if _enabled():
        os.environ.setdefault(ALLOCATOR_ENV, ALLOCATOR_CONF)


def after_imports() -> None:
    """Freeze what the imports made out of the cyclic collector (see the module docstring)."""
    if _enabled():
        gc.freeze()
