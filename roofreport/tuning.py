"""Process-wide settings that make roofreport faster or leaner, in one place. The command's own
process applies them (`roofreport.__main__`: `before_imports` before polars is first imported,
`after_imports` once the CLI's modules are loaded); `import roofreport` never does, so a program
using the library keeps its environment and its garbage collector as they were (issue #30).
The readers of big files take their piece sizes from here, in any process.

Each is kept because `make bench` / the measurements in benchmarks/README.md show it earns at
least 10 % against the plain default (figures from this 2-core machine, shared and noisy: CPU
time and peak RSS, best of 3-5 runs alternating with the default):

* polars' allocator (jemalloc) returns memory it freed to the system within 200 ms, from a
  background thread, instead of keeping it for the rest of the process: the peak memory of a
  400 MB trace's parse is ~120-160 MB lower, at the same CPU time. polars reads the variable
  when it is first imported; a value the user set always wins. The worker processes the
  command starts inherit it (a library caller's workers get the caller's environment).
* The objects alive once roofreport and polars are imported (some 10^5 modules, classes,
  functions and constants, which live as long as the process) are frozen out of the cyclic
  garbage collector (`gc.freeze`), which would otherwise walk them on every full collection:
  a small file's `roofreport parse` takes ~20 % less CPU (0.29 vs 0.36 s, median of 12). The
  freeze was measured in the command's process only: worker processes are not frozen.
* `CSV_PIECE_BYTES`: the body of a big CSV trace (nvprof's `--print-gpu-trace --csv`) is read
  by `pl.read_csv` in pieces of this size (`families/common/pieces.py`), not in one call,
  whose read buffers stay with polars' allocator: a 200 MB trace's peak RSS 385 MB against
  439 MB in one piece (-12 %), CPU 1.42 against 1.49 s.
* `TEXT_BLOCK_BYTES`: an Nsight Compute text log is read this many bytes of whole lines at a
  time (`families/ncu/text_lines.py`), never whole: a 200 MB log whose values vary from
  kernel to kernel peaks at 405 MB against 600 MB read in one block (-33 %), at the same CPU
  time (2.36 against 2.33 s). Just under glibc's 32 MiB mmap threshold, a block's bytes reuse
  the last one's memory. (A smaller first block, to start sooner, earned nothing measurable.)

`ROOFREPORT_TUNING=0` in the environment turns the allocator setting and the freeze off.
"""

from __future__ import annotations

import gc
import os

ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
ALLOCATOR_CONF = "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0"

CSV_PIECE_BYTES = 16 << 20
TEXT_BLOCK_BYTES = 31 << 20


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
