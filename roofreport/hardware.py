"""GPU peaks: the database shipped in `roofreport/data/gpu_specs.tsv`, matched from device names.

The TSV is the project's sourced reference (every row names its datasheet or whitepaper, the
`confidence` column grades each value). Peaks are held in base units (FLOP/s, byte/s).

Matching a device name as the logs spell it (`Tesla V100-SXM2-16GB (0)`, `A100-SXM4-40GB`,
`NVIDIA L40S`) or a path token (`a100/vgg11/...`, `..._k80_full`), in this order:

1. the whole name equals an alias or key (case, `-`/`_`/space, the `NVIDIA ` prefix that pre-R470
   drivers omit, and a trailing device index ` (0)` ignored);
2. the longest alias the name starts with, ending at a token boundary: `NVIDIA L4` never matches
   `NVIDIA L40S`, `NVIDIA A10` never `NVIDIA A10G`, `Tesla V100` never `Tesla V100S`;
3. a GPU token anywhere in the name (`data/gpu_tokens.tsv`): `A100`, `V100`, `K80`, `P40` map to
   a representative SKU, and the spec's `notes` say which was assumed;
4. a name that is the beginning of an alias (nvprof's trace truncates `Tesla V100-SXM2-16GB` to
   `Tesla V100-SXM2`): the first such row.

Users add or correct GPUs with a TSV of the same columns or a TOML file (`with_overrides`).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, fields, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import NamedTuple

from roofreport.errors import UsageError

_DATA = Path(__file__).resolve().parent / "data"

# TSV column -> (GpuSpec field, factor to base units)
_PEAK_COLUMNS = {
    "fp64_tflops": ("fp64", 1e12), "fp32_tflops": ("fp32", 1e12), "fp16_tflops": ("fp16", 1e12),
    "tf32_tensor_tflops": ("tf32_tensor", 1e12), "fp16_tensor_tflops": ("fp16_tensor", 1e12),
    "bf16_tensor_tflops": ("bf16_tensor", 1e12), "int8_tensor_tops": ("int8_tensor", 1e12),
    "dram_gbps": ("dram_bw", 1e9), "dram_gib": ("dram_capacity", 2.0**30), "l2_mib": ("l2_capacity", 2.0**20),
}
_NUMBER_COLUMNS = {"sm_count": "sm_count", "boost_clock_mhz": "boost_clock_mhz", "base_clock_mhz": "base_clock_mhz"}
_TEXT_COLUMNS = {"arch": "arch", "compute_capability": "compute_capability", "source": "source",
                 "notes": "notes", "confidence": "confidence"}

PRECISIONS = {
    "fp64": "fp64", "fp32": "fp32", "fp16": "fp16",
    "tensor_fp16": "fp16_tensor", "tensor_tf32": "tf32_tensor", "tensor_bf16": "bf16_tensor",
    "tensor_int8": "int8_tensor",
}


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's datasheet values in base units (FLOP/s, byte/s, bytes, MHz); None when unknown."""

    key: str
    name: str
    aliases: tuple[str, ...]
    arch: str | None = None
    family: str | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    boost_clock_mhz: float | None = None
    base_clock_mhz: float | None = None
    fp64: float | None = None
    fp32: float | None = None
    fp16: float | None = None
    tf32_tensor: float | None = None
    fp16_tensor: float | None = None
    bf16_tensor: float | None = None
    int8_tensor: float | None = None
    dram_bw: float | None = None
    dram_capacity: float | None = None
    l2_capacity: float | None = None
    source: str = ""
    notes: str = ""
    confidence: str = ""

    def peak(self, precision: str) -> float | None:
        """Peak FLOP/s for fp64, fp32, fp16, tensor_fp16, tensor_tf32, tensor_bf16 (tensor_int8: OP/s)."""
        if precision not in PRECISIONS:
            raise UsageError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
        return getattr(self, PRECISIONS[precision])

    def clock_scale(self, clock_hz: float | None) -> float | None:
        """Factor that brings datasheet compute peaks (quoted at the boost clock) to `clock_hz`."""
        if not clock_hz or not self.boost_clock_mhz:
            return None
        return clock_hz / (self.boost_clock_mhz * 1e6)

    def at_clock(self, clock_hz: float | None) -> "GpuSpec":
        """This spec with compute peaks scaled to the SM clock a log ran at (ncu locks clocks to
        base by default); DRAM bandwidth is left alone (the SM clock lock does not set it)."""
        factor = self.clock_scale(clock_hz)
        if factor is None:
            return self
        scaled = {f: getattr(self, f) * factor for f in PRECISIONS.values() if getattr(self, f) is not None}
        note = f"compute peaks scaled to the logged SM clock {clock_hz / 1e6:.0f} MHz (x{factor:.3f})"
        return replace(self, **scaled, notes=f"{self.notes} {note}".strip())

    def describe(self) -> str:
        return f"{self.key} ({self.arch or 'unknown arch'}): {self.source}"


def _family(arch: str | None) -> str | None:
    if not arch:
        return None
    return arch.split()[0].lower()


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _normalize(name: str) -> str:
    """Case, separators, device index and the optional `NVIDIA ` prefix do not matter."""
    s = name.strip().lower()
    s = re.sub(r"\s*\(\d+\)\s*$", "", s)
    s = re.sub(r"[-_\s]+", " ", s).strip()
    return re.sub(r"^nvidia ", "", s)


def spec_from_row(row: dict, base: GpuSpec | None = None, origin: str = "") -> GpuSpec:
    """A GpuSpec from one TSV/TOML row (tsv column names and units); fields the row leaves out
    keep `base`'s values (an override of some values of a known GPU)."""
    key = base.key if base else str(row.get("gpu") or "").strip()
    if not key:
        raise UsageError(f"{origin or 'GPU table'}: a row without a 'gpu' name")
    values: dict = {}
    aliases = row.get("aliases")
    if aliases is not None:
        items = aliases if isinstance(aliases, list) else str(aliases).split("|")
        values["aliases"] = tuple(a.strip() for a in items if a and a.strip())
    for col, (attr, factor) in _PEAK_COLUMNS.items():
        if col in row and _number(row[col]) is not None:
            values[attr] = float(round(_number(row[col]) * factor, 3))
    for col, attr in _NUMBER_COLUMNS.items():
        if col in row and _number(row[col]) is not None:
            values[attr] = int(_number(row[col])) if attr == "sm_count" else _number(row[col])
    for col, attr in _TEXT_COLUMNS.items():
        if row.get(col) not in (None, ""):
            values[attr] = str(row[col])
    if origin and base is not None:
        values["source"] = f"{values.get('source', base.source)} [overridden by {origin}]"
    elif origin:
        values["source"] = f"{values.get('source', '')} [from {origin}]".strip()
    # (one GpuSpec made per row: the shipped table is read by every run)
    arch = values.get("arch", base.arch if base else None)
    names = values.get("aliases", base.aliases if base else ()) or (key,)
    values.update(family=_family(arch), name=names[0], aliases=tuple(dict.fromkeys(names)))
    return replace(base, **values) if base else GpuSpec(key=key, **values)


def _read_tsv(text: str) -> list[dict]:
    return [dict(r) for r in csv.DictReader(io.StringIO(text), delimiter="\t")]


class _Token(NamedTuple):
    """A GPU token of `gpu_tokens.tsv`: its regex (compiled when a name gets this far), the
    spec it stands for, and what was assumed."""

    regex: str
    key: str
    note: str

    def search(self, name: str) -> bool:
        return _compiled(self.regex).search(name) is not None


@cache
def _compiled(regex: str) -> re.Pattern:
    return re.compile(r"(?<![a-z0-9])(?:" + regex + r")(?![a-z0-9])")


class GpuDatabase:
    """GPU specs and the rules that find one from a device name or path token."""

    def __init__(self, specs: list[GpuSpec], tokens: list[_Token] | None = None):
        self.specs = list(specs)
        self._tokens = list(tokens or [])
        self._by_key = {s.key: s for s in self.specs}
        # (normalized alias, spec); keys count as aliases too
        self._aliases = [(_normalize(a), s) for s in self.specs for a in (*s.aliases, s.key)]

    def __len__(self) -> int:
        return len(self.specs)

    def get(self, key: str) -> GpuSpec | None:
        return self._by_key.get(key)

    def match(self, device_name: str | None) -> GpuSpec | None:
        """The spec for a device name or path token (rules in the module docstring), or None."""
        if not device_name or not device_name.strip():
            return None
        name = _normalize(device_name)
        return (self._exact(name) or self._longest_prefix(name) or self._token(name)
                or self._truncated(name))

    def _exact(self, name: str) -> GpuSpec | None:
        return next((s for a, s in self._aliases if a == name), None)

    def _longest_prefix(self, name: str) -> GpuSpec | None:
        best = None
        for alias, spec in self._aliases:
            if name.startswith(alias) and not name[len(alias):len(alias) + 1].isalnum():
                if best is None or len(alias) > len(best[0]):
                    best = (alias, spec)
        return best[1] if best else None

    def _token(self, name: str) -> GpuSpec | None:
        for token in self._tokens:
            if token.search(name) and token.key in self._by_key:
                spec = self._by_key[token.key]
                return replace(spec, notes=f"{token.note}. {spec.notes}".strip())
        return None

    def _truncated(self, name: str) -> GpuSpec | None:
        if not re.search(r"\d", name):  # `NVIDIA GeForce` alone says nothing
            return None
        for alias, spec in self._aliases:
            if alias.startswith(name) and not alias[len(name):len(name) + 1].isalnum():
                return replace(spec, notes=f"device name '{name}' looks truncated; first matching row used. "
                                           f"{spec.notes}".strip())
        return None

    def with_overrides(self, path: Path) -> "GpuDatabase":
        """A new database with the rows of a user file (TSV with gpu_specs.tsv's columns, or TOML
        `[[gpu]]` tables with the same keys) added, or merged into the GPU of the same name."""
        from roofreport.userfiles import read_records  # (tomllib: only for a user's file)

        rows = read_records(path, "gpu", "GPU peaks file", delimiter="\t")
        current = {s.key: s for s in self.specs}
        added: list[str] = []
        for row in rows:
            base = self._find_base(row, current)
            spec = spec_from_row(row, base=base, origin=str(path))
            if base is None and spec.key not in current:
                added.append(spec.key)
            current[spec.key] = spec
        # New GPUs first, so their aliases win ties in matching.
        order = added + [s.key for s in self.specs]
        return GpuDatabase([current[k] for k in order], self._tokens)

    def _find_base(self, row: dict, current: dict[str, GpuSpec]) -> GpuSpec | None:
        name = str(row.get("gpu") or "")
        if not name:
            return None
        found = current.get(name) or self._exact(_normalize(name))
        return current.get(found.key) if found else None


def _load_tokens() -> list[_Token]:
    rows = _read_tsv((_DATA / "gpu_tokens.tsv").read_text(encoding="utf-8"))
    return [_Token(r["token_regex"], r["gpu"], r["note"]) for r in rows]


@lru_cache(maxsize=1)
def _default() -> GpuDatabase:
    rows = _read_tsv((_DATA / "gpu_specs.tsv").read_text(encoding="utf-8"))
    return GpuDatabase([spec_from_row(r) for r in rows], _load_tokens())


def load_database(overrides: Path | None = None) -> GpuDatabase:
    """The shipped database (cached), with a user's overrides file applied when given."""
    db = _default()
    return db.with_overrides(overrides) if overrides else db


def match(device_name: str | None) -> GpuSpec | None:
    """Match against the shipped database."""
    return _default().match(device_name)


def spec_fields() -> list[str]:
    return [f.name for f in fields(GpuSpec)]
