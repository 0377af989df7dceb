"""The registry of log formats, in sniffing priority order.

A family is a package `roofreport/families/<tool>/`, named like its grammar in `grammars/`.
Adding one costs a grammar, a package whose `__init__` exposes `SPECS`, and one line here.

Every file is sniffed by the specs in order, so a family's `__init__` holds only what sniffing
needs and its readers are imported when a file of theirs is parsed: a spec's `parse` is a
`DeferredReader("roofreport.families.<tool>.<module>", "<function>")`, which imports the reader
on its first call. Parsing one nsys CSV then loads no ncu, nvprof or nvidia-smi reader
(tests/test_startup.py checks it).
"""

from __future__ import annotations

from roofreport.families import dcgm, ncu, nsys, nvprof, pytorch, rocm, smi, tegrastats
from roofreport.families.spec import DeferredReader, FormatSpec, ParseResult, RunHints

# Order matters: the first spec whose sniff answers wins. Binary containers first, then the
# formats with the most specific signatures.
REGISTRY: list[FormatSpec] = [
    *ncu.BINARY_SPECS,
    *nsys.BINARY_SPECS,
    *nvprof.BINARY_SPECS,
    *pytorch.BINARY_SPECS,
    *ncu.SPECS,
    *nvprof.SPECS,
    *nsys.SPECS,
    *pytorch.SPECS,
    *dcgm.SPECS,
    *tegrastats.SPECS,
    *rocm.SPECS,
    *smi.SPECS,     # last: it sniffs what no other family claimed
]

__all__ = ["REGISTRY", "DeferredReader", "FormatSpec", "ParseResult", "RunHints"]
