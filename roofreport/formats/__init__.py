"""The registry of log formats, in sniffing priority order.

Adding a format costs one grammar, one module exposing `SPECS`, and one line here.
"""

from __future__ import annotations

from roofreport.formats import ncu, nsys, nvprof, smi
from roofreport.formats.base import FormatSpec, ParseResult, RunHints

# Order matters: the first spec whose sniff answers wins. Binary containers first, then the
# formats with the most specific signatures.
REGISTRY: list[FormatSpec] = [
    *nsys.BINARY_SPECS,
    *nvprof.BINARY_SPECS,
    *ncu.SPECS,
    *nvprof.SPECS,
    *nsys.SPECS,
    *smi.SPECS,
]

__all__ = ["REGISTRY", "FormatSpec", "ParseResult", "RunHints"]
