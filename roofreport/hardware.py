"""GPU peaks: the database shipped in `roofreport/data/gpu_specs.tsv`, matched from device names.

The TSV is the project's sourced reference (every row names its datasheet or whitepaper, the
`confidence` column grades each value, an empty cell is a value nobody published). Peaks are held
in base units (FLOP/s, byte/s); `label` is the short name reports print.

NVIDIA and AMD GPUs share the columns. "tensor" means matrix-core work on both vendors: NVIDIA's
tensor cores and AMD's MFMA matrix cores (`*_tensor_*` columns: the matrix peak per input type;
`fp64_tensor`/`fp32_tensor` are the FP64/FP32 matrix peaks, AMD CDNA2+ and NVIDIA's DMMA). An AMD
row's `compute_capability` is its LLVM target (`gfx90a`, `gfx942`), `sm_count` its compute units,
and its `arch` starts with the architecture (`CDNA3 ...`), whose first word, lower-cased, is the
family (`cdna3`), as `Hopper GH100` gives `hopper`.

A device name as the logs spell it (`Tesla V100-SXM2-16GB (0)`, `A100-SXM4-40GB`, `NVIDIA L40S`,
nvidia-smi's `GeForce RTX 208...`) or a path token (`a100/vgg11/...`, `..._k80_full`) stands for
the rows found by the first of these rules that finds any, and matches only when that is exactly
one row (so a name never gets a wrong GPU's peaks; a GPU a user added wins over shipped rows that
share its name):

1. the whole name is a row's key or alias (case, `-`/`_`/space, a trailing device index ` (0)`
   and the `NVIDIA ` prefix that pre-R470 drivers omit do not matter; a bare model number, `A2`
   or `L4`, must carry `NVIDIA `: a folder named `a2` is no GPU, rule 4 reads path tokens);
2. the longest key or alias the name starts with, ending at a word boundary and followed by no
   word that makes it another GPU (`Ti`, `SUPER`, `Laptop GPU`, `with Max-Q Design`, `MIG
   1g.5gb`, `NVL`, `8GB`, a one-letter suffix as in `RTX 4090 D`): `NVIDIA L4` never matches
   `NVIDIA L40S`, `NVIDIA A10` never `NVIDIA A10G`, `Tesla V100` never `Tesla V100S`;
3. a cut name: nvidia-smi's `...` (`GeForce RTX 208...` is a 2080, 2080 SUPER or 2080 Ti: no
   match), or a name of at least 15 characters that begins longer names (nvprof's trace keeps
   `Tesla V100-SXM2`, ncu's raw page `NVIDIA GeForce RTX`): every row with a name so begun;
4. GPU tokens (`data/gpu_tokens.tsv`) in a path or an odd spelling (`a100_vgg11`, `RTX3050TI`,
   `k80`): every row with a name holding the token as whole words, unless the next word makes it
   another product (`rtx3070` is a 3070 or a 3070 Laptop GPU, never a 3070 Ti; `v100` is any
   V100, so it matches none).

Users add or correct GPUs with a TSV of the same columns or a TOML file (`with_overrides`).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from roofreport.errors import UsageError

_DATA = Path(__file__).resolve().parent / "data"

# TSV column -> (GpuSpec field, factor to base units)
_PEAK_COLUMNS = {
    "fp64_tflops": ("fp64", 1e12), "fp32_tflops": ("fp32", 1e12), "fp16_tflops": ("fp16", 1e12),
    "tf32_tensor_tflops": ("tf32_tensor", 1e12), "fp16_tensor_tflops": ("fp16_tensor", 1e12),
    "bf16_tensor_tflops": ("bf16_tensor", 1e12), "int8_tensor_tops": ("int8_tensor", 1e12),
    "fp64_tensor_tflops": ("fp64_tensor", 1e12), "fp32_tensor_tflops": ("fp32_tensor", 1e12),
    "dram_gbps": ("dram_bw", 1e9), "dram_gib": ("dram_capacity", 2.0**30), "l2_mib": ("l2_capacity", 2.0**20),
}
_NUMBER_COLUMNS = {"sm_count": "sm_count", "boost_clock_mhz": "boost_clock_mhz", "base_clock_mhz": "base_clock_mhz"}
_TEXT_COLUMNS = {"arch": "arch", "compute_capability": "compute_capability", "source": "source",
                 "notes": "notes", "confidence": "confidence", "label": "label"}

PRECISIONS = {
    "fp64": "fp64", "fp32": "fp32", "fp16": "fp16",
    "tensor_fp16": "fp16_tensor", "tensor_tf32": "tf32_tensor", "tensor_bf16": "bf16_tensor",
    "tensor_int8": "int8_tensor", "tensor_fp64": "fp64_tensor", "tensor_fp32": "fp32_tensor",
}

_DEVICE_INDEX = re.compile(r"\s*\(\d+\)\s*$")        # `Tesla K80 (3)`: the device, not the model
_CUT_MARK = re.compile(r"(?:\.\.\.|\u2026)\s*$")       # nvidia-smi's `GeForce RTX 208...`
_SHORTEST_CUT = 15   # nvprof's trace keeps 15 characters of a name, ncu's raw page 18, nvidia-smi 15 + `...`
_BARE_MODEL = re.compile(r"[a-z]{1,2}\d{1,4}[a-z]?")  # `a2`, `l4`, `h200`: GPU only after `NVIDIA `
# Words that, after a GPU's name, name another product (`RTX 3070 Ti`, `RTX 4090 D`, `with Max-Q
# Design`) or another variant of the same one (`Laptop GPU`, `MIG 1g.5gb`, `H200 NVL`, `T1000 8GB`).
_OTHER_PRODUCT = r"ti|super|oem|embedded|with|max|[a-z]"
_OTHER_VARIANT = r"laptop|mobile|mig|nvl\d*|\d+gb"
_PRODUCT_WORD = re.compile(_OTHER_PRODUCT)
_GPU_WORD = re.compile(f"{_OTHER_PRODUCT}|{_OTHER_VARIANT}")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's datasheet values in base units (FLOP/s, byte/s, bytes, MHz); None when unknown.
    `key` identifies the row, `label` is its short human name ("V100-SXM2-16GB", "RTX 2080 Ti")."""

    key: str
    name: str
    aliases: tuple[str, ...]
    label: str = ""
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
    fp64_tensor: float | None = None
    fp32_tensor: float | None = None
    dram_bw: float | None = None
    dram_capacity: float | None = None
    l2_capacity: float | None = None
    source: str = ""
    notes: str = ""
    confidence: str = ""

    def peak(self, precision: str) -> float | None:
        """Peak FLOP/s for fp64, fp32, fp16, tensor_fp16, tensor_tf32, tensor_bf16, tensor_fp64,
        tensor_fp32 (tensor_int8: OP/s)."""
        if precision not in PRECISIONS:
            raise UsageError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
        return getattr(self, PRECISIONS[precision])

    def clock_scale(self, clock_hz: float | None) -> float | None:
        """Factor that brings datasheet compute peaks (quoted at the boost clock) to `clock_hz`."""
        if not clock_hz or not self.boost_clock_mhz:
            return None
        return clock_hz / (self.boost_clock_mhz * 1e6)

    def at_clock(self, clock_hz: float | None) -> GpuSpec:
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


def _words(name: str) -> str:
    """Lower case, one space between words, no device index: `Tesla V100-SXM2-16GB (0)` ->
    `tesla v100 sxm2 16gb`."""
    text = _DEVICE_INDEX.sub("", name.strip().lower())
    return re.sub(r"[-_\s]+", " ", text).strip()


class _Name(NamedTuple):
    """A name as matching compares it: its words without `nvidia `, and whether it said `NVIDIA `
    (a name like `NVIDIA A2` then matches only names that say it too)."""

    text: str
    vendor: bool

    @classmethod
    def of(cls, name: str, keep_end: bool = False) -> _Name:
        words = _words(name)
        vendor = words.startswith("nvidia ")
        text = words[len("nvidia "):] if vendor else words
        if keep_end and name[-1:] in " -_" and text:   # `GeForce GTX 1650 ...`: a word follows
            text += " "
        return cls(text, vendor)

    def bare(self) -> bool:
        return _BARE_MODEL.fullmatch(self.text) is not None


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
    values.setdefault("label", base.label if base else key)
    return replace(base, **values) if base else GpuSpec(key=key, **values)


def _read_tsv(text: str) -> list[dict]:
    return [dict(r) for r in csv.DictReader(io.StringIO(text), delimiter="\t")]


class GpuDatabase:
    """GPU specs and the rules that find one from a device name or path token."""

    def __init__(self, specs: list[GpuSpec], token_regexes: list[str] | None = None,
                 preferred: frozenset[str] = frozenset()):
        self.specs = list(specs)
        self._token_regexes = list(token_regexes or [])
        self._preferred = preferred    # keys of a user's own GPUs: they win a shared name
        # name -> candidates: a campaign names a few GPUs thousands of times (every file's
        # device and path tokens), and a look-up walks every name of the database
        self._found: dict[str, tuple[GpuSpec, ...]] = {}
        self._by_key = {s.key: s for s in self.specs}
        self._names = [(_Name.of(n), s) for s in self.specs for n in dict.fromkeys((s.key, *s.aliases))]
        self._by_name: dict[str, list[tuple[_Name, GpuSpec]]] = {}
        for name, spec in self._names:
            self._by_name.setdefault(name.text, []).append((name, spec))
        self._runs = _word_runs(self._names)
        self._token = _token_pattern(self._token_regexes)

    def __len__(self) -> int:
        return len(self.specs)

    def get(self, key: str) -> GpuSpec | None:
        return self._by_key.get(key)

    def match(self, device_name: str | None) -> GpuSpec | None:
        """The one spec a device name or path token stands for (module docstring), or None."""
        found = self.candidates(device_name)
        return found[0] if len(found) == 1 else None

    def candidates(self, device_name: str | None) -> list[GpuSpec]:
        """Every spec the name can stand for, by the first rule that finds any (module docstring)."""
        key = device_name or ""
        if key not in self._found:
            self._found[key] = tuple(self._candidates(key))
        return list(self._found[key])

    def _candidates(self, device_name: str) -> list[GpuSpec]:
        raw = _DEVICE_INDEX.sub("", device_name.strip())
        if not raw:
            return []
        cut = _CUT_MARK.search(raw)
        if cut:
            found = self._beginning(_Name.of(raw[:cut.start()], keep_end=True))
        else:
            name = _Name.of(raw)
            found = (self._exact(name) or self._extended(name)
                     or (self._beginning(name) if len(raw) >= _SHORTEST_CUT else [])
                     or self._tokens(name))
        mine = [s for s in found if s.key in self._preferred]
        return mine or found

    def family(self, device_name: str | None) -> str | None:
        """The GPU family every candidate shares (`v100` is some Volta), or None."""
        families = {s.family for s in self.candidates(device_name)}
        return families.pop() if len(families) == 1 else None

    def _usable(self, stored: _Name, name: _Name) -> bool:
        return name.vendor or not (stored.vendor and stored.bare())

    def _exact(self, name: _Name) -> list[GpuSpec]:
        return _unique(s for n, s in self._by_name.get(name.text, []) if self._usable(n, name))

    def _extended(self, name: _Name) -> list[GpuSpec]:
        """Rows of the longest name that `name` continues by words naming no other GPU."""
        found = [(len(n.text), s) for n, s in self._names if _continues(name.text, n.text) and self._usable(n, name)]
        longest = max((size for size, _ in found), default=0)
        return _unique(s for size, s in found if size == longest)

    def _beginning(self, name: _Name) -> list[GpuSpec]:
        """Rows with a longer name that begins with the cut `name`."""
        if not name.text.strip():
            return []
        return _unique(s for n, s in self._names
                       if n.text.startswith(name.text) and n.text != name.text and self._usable(n, name))

    def _tokens(self, name: _Name) -> list[GpuSpec]:
        if self._token is None:
            return []
        found = [self._runs.get(m.group(0).replace(" ", ""), []) for m in self._token.finditer(name.text)]
        return _unique(s for specs in found for s in specs)

    def with_overrides(self, path: Path) -> GpuDatabase:
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
        order = added + [s.key for s in self.specs]
        return GpuDatabase([current[k] for k in order], self._token_regexes, self._preferred | frozenset(added))

    def _find_base(self, row: dict, current: dict[str, GpuSpec]) -> GpuSpec | None:
        name = str(row.get("gpu") or "")
        if not name:
            return None
        exact = self._exact(_Name.of(name))
        found = current.get(name) or (exact[0] if len(exact) == 1 else None)
        return current.get(found.key) if found else None


def _continues(text: str, start: str) -> bool:
    """`text` is `start` and more words, the first of which names no other GPU (`tesla k10.g2.8gb`
    continues `tesla k10`; `geforce rtx 3070 ti` does not continue `geforce rtx 3070`)."""
    rest = text[len(start):]
    if not start or not text.startswith(start) or not rest or rest[0].isalnum():
        return False
    words = rest.split()
    return not (words and _GPU_WORD.fullmatch(words[0]))


def _unique(specs) -> list[GpuSpec]:
    return list({s.key: s for s in specs}.values())


def _word_runs(names: list[tuple[_Name, GpuSpec]]) -> dict[str, list[GpuSpec]]:
    """Every run of whole words of every name, spaces removed (`rtx3070`, `a100`, `titanxp`) ->
    the rows holding it, unless the word after it makes it another product (`rtx3070` + `ti`)."""
    runs: dict[str, dict[str, GpuSpec]] = {}
    for name, spec in names:
        words = name.text.split(" ")
        for start in range(len(words)):
            for end in range(start + 1, len(words) + 1):
                if end == len(words) or not _PRODUCT_WORD.fullmatch(words[end]):
                    runs.setdefault("".join(words[start:end]), {})[spec.key] = spec
    return {run: list(specs.values()) for run, specs in runs.items()}


def _token_pattern(regexes: list[str]) -> re.Pattern | None:
    """GPU tokens as whole words (`rtx3060 laptop` included), not followed by a word that makes
    them another GPU (`a100 mig`, `rtx3070 ti`)."""
    if not regexes:
        return None
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(f"(?:{r})" for r in regexes) + r")(?: laptop(?: gpu)?)?"
                      rf"(?![a-z0-9])(?! (?:{_OTHER_PRODUCT}|{_OTHER_VARIANT})(?: |$))")


def _load_token_regexes() -> list[str]:
    return [r["token_regex"] for r in _read_tsv((_DATA / "gpu_tokens.tsv").read_text(encoding="utf-8"))]


@lru_cache(maxsize=1)
def _default() -> GpuDatabase:
    rows = _read_tsv((_DATA / "gpu_specs.tsv").read_text(encoding="utf-8"))
    return GpuDatabase([spec_from_row(r) for r in rows], _load_token_regexes())


def load_database(overrides: Path | None = None) -> GpuDatabase:
    """The shipped database (cached), with a user's overrides file applied when given."""
    db = _default()
    return db.with_overrides(overrides) if overrides else db


def match(device_name: str | None) -> GpuSpec | None:
    """Match against the shipped database."""
    return _default().match(device_name)


def spec_fields() -> list[str]:
    return [f.name for f in fields(GpuSpec)]
