"""The registry of log formats, in sniffing priority order.

Adding a format costs one grammar, one module exposing `SPECS`, and one line here.

Every file is sniffed by the specs in order, so the family modules listed here (`ncu`, `nsys`,
`nvprof`, `smi`) hold only what sniffing needs and import their readers when a file of theirs
is parsed: a spec's `parse` may be `later("roofreport.formats.x", "parse")`, which imports the
reader on its first call. Parsing one nsys CSV then loads no ncu, nvprof or nvidia-smi reader
(tests/test_startup.py checks it).
"""

from __future__ import annotations

from importlib import import_module

from roofreport.formats.base import FormatSpec, ParseResult, RunHints


class later:
    """`module.function`, imported on the first call (a reader only a matching file needs)."""

    __slots__ = ("module", "function", "_target")

    def __init__(self, module: str, function: str):
        self.module, self.function, self._target = module, function, None

    def __call__(self, *args, **kwargs):
        if self._target is None:
            self._target = getattr(import_module(self.module), self.function)
        return self._target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"later({self.module}.{self.function})"


# (after `later`: the family modules use it while this package is being initialised)
from roofreport.formats import ncu, nsys, nvprof, smi  # noqa: E402

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

__all__ = ["REGISTRY", "FormatSpec", "ParseResult", "RunHints", "later"]
