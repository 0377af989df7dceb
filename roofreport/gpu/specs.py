"""One GPU's datasheet values (`GpuSpec`) and how a row of the GPU table becomes one.

The table is `roofreport/data/gpu_specs.tsv`, the project's sourced reference: every row names
its datasheet or whitepaper, the `confidence` column grades each value, an empty cell is a value
nobody published. Peaks are held in base units (FLOP/s, byte/s, bytes); `label` is the short
name reports print. Two columns say what a row stands for when the evidence names less than
the row:

* `product`: the product a row is a variant of (`V100` for the V100's PCIe, SXM2 and DGXS
  boards of 16 and 32 GB); empty when the row is a product of its own;
* `default_for`: `product` when the row is its product's default variant (what a folder named
  `v100/` gets), `cc` when it is the default of its compute capability (what a log that gives
  only `CC 7.0` gets), or both (`product|cc`). A compute capability is NVIDIA's `7.0` or an AMD
  LLVM target (`gfx90a`) alike: the `compute_capability` column holds either.

Clocks: `boost_clock_mhz` is the clock the datasheet peaks are quoted at; `base_clock_mhz` the
clock ncu locks the SMs to by default (`--clock-control base`: `gpu/clocks.py`); `mem_clock_mhz`
the DRAM clock as nvidia-smi, rocm-smi and the profilers count it (half the per-pin data rate:
877 MHz for the V100's 1.75 Gbit/s HBM2, 5000 MHz for the T4's 10 Gbit/s GDDR6), the one `dram_bw`
is quoted at. `base_clock_source` and `mem_clock_source` say where each came from (NVIDIA's page
or whitepaper, else the GPU's TechPowerUp entry, whose boost clock and bandwidth agree with the
row's); a clock no source gives stays empty, and a run that needs it says so.

NVIDIA and AMD GPUs share the columns. "tensor" means matrix-core work on both vendors: NVIDIA's
tensor cores and AMD's MFMA matrix cores (`*_tensor_*` columns: the matrix peak per input type;
`fp64_tensor`/`fp32_tensor` are the FP64/FP32 matrix peaks, AMD CDNA2+ and NVIDIA's DMMA). An AMD
row's `compute_capability` is its LLVM target (`gfx90a`, `gfx942`), `sm_count` its compute units,
and its `arch` starts with the architecture (`CDNA3 ...`), whose first word, lower-cased, is the
family (`cdna3`), as `Hopper GH100` gives `hopper`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace

from roofreport.errors import UsageError

# TSV column -> (GpuSpec field, factor to base units)
_PEAK_COLUMNS = {
    "fp64_tflops": ("fp64", 1e12), "fp32_tflops": ("fp32", 1e12), "fp16_tflops": ("fp16", 1e12),
    "tf32_tensor_tflops": ("tf32_tensor", 1e12), "fp16_tensor_tflops": ("fp16_tensor", 1e12),
    "bf16_tensor_tflops": ("bf16_tensor", 1e12), "int8_tensor_tops": ("int8_tensor", 1e12),
    "fp64_tensor_tflops": ("fp64_tensor", 1e12), "fp32_tensor_tflops": ("fp32_tensor", 1e12),
    "fp8_tensor_tflops": ("fp8_tensor", 1e12),
    "dram_gbps": ("dram_bw", 1e9), "nvlink_gbps": ("nvlink_bw", 1e9), "dram_gib": ("dram_capacity", 2.0**30), "l2_mib": ("l2_capacity", 2.0**20),
}
_NUMBER_COLUMNS = {"sm_count": "sm_count", "boost_clock_mhz": "boost_clock_mhz", "base_clock_mhz": "base_clock_mhz",
                   "mem_clock_mhz": "mem_clock_mhz", "pcie_gen": "pcie_gen", "pcie_lanes": "pcie_lanes"}
_WHOLE = ("sm_count", "pcie_gen", "pcie_lanes")
# PCIe bandwidth per lane and direction, by generation, in byte/s (PCI-SIG: 2.5/5 GT/s with
# 8b/10b coding, 8/16/32/64 GT/s with 128b/130b).
PCIE_LANE_BW = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.877e9}
# A logged memory clock this far above the table's is another convention (a data rate, not
# nvidia-smi's memory clock): the datasheet bandwidth is then left as it is.
_MEM_CLOCK_TOLERANCE = 1.05
_TEXT_COLUMNS = {"arch": "arch", "compute_capability": "compute_capability", "source": "source",
                 "notes": "notes", "confidence": "confidence", "link_source": "link_source", "label": "label", "product": "product",
                 "base_clock_source": "base_clock_source", "mem_clock_source": "mem_clock_source"}

PRECISIONS = {
    "fp64": "fp64", "fp32": "fp32", "fp16": "fp16",
    "tensor_fp16": "fp16_tensor", "tensor_tf32": "tf32_tensor", "tensor_bf16": "bf16_tensor",
    "tensor_int8": "int8_tensor", "tensor_fp64": "fp64_tensor", "tensor_fp32": "fp32_tensor",
    "tensor_fp8": "fp8_tensor",
}
DEFAULT_KINDS = ("product", "cc")   # what a row may be the default of (`default_for`)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's datasheet values in base units (FLOP/s, byte/s, bytes, MHz); None when unknown.
    `key` identifies the row, `label` is its short human name ("V100-SXM2-16GB", "RTX 2080 Ti"),
    `product` the product it is a variant of (its own key when none), `default_for` what it
    stands in for (module docstring)."""

    key: str
    name: str
    aliases: tuple[str, ...]
    label: str = ""
    product: str = ""
    default_for: frozenset[str] = frozenset()
    arch: str | None = None
    family: str | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    boost_clock_mhz: float | None = None
    base_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None   # the memory clock `dram_bw` is quoted at (nvidia-smi's max)
    # Where each clock comes from (a datasheet, NVIDIA's product page, the TechPowerUp entry):
    # the table gives no base or memory clock without one (`tests/test_gpu_clock_sources.py`).
    base_clock_source: str = ""
    mem_clock_source: str = ""
    fp64: float | None = None
    fp32: float | None = None
    fp16: float | None = None
    tf32_tensor: float | None = None
    fp16_tensor: float | None = None
    bf16_tensor: float | None = None
    int8_tensor: float | None = None
    fp64_tensor: float | None = None
    fp32_tensor: float | None = None
    fp8_tensor: float | None = None   # dense FP8 matrix peak (E4M3/E5M2; the datasheets' sparse figure halved)
    dram_bw: float | None = None
    dram_capacity: float | None = None
    l2_capacity: float | None = None
    # The links between GPUs: NVLink's bandwidth per direction (byte/s; the datasheets quote both
    # directions together), and the PCIe generation and lanes of the board.
    nvlink_bw: float | None = None
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    link_source: str = ""
    source: str = ""
    notes: str = ""
    confidence: str = ""
    # Fields a run's own measurement replaced (rocprof-compute's `roofline.csv`), and what
    # measured them: `with_measured`.
    measured: frozenset[str] = frozenset()
    measured_from: str = ""

    def peak(self, precision: str) -> float | None:
        """Peak FLOP/s for fp64, fp32, fp16, tensor_fp16, tensor_tf32, tensor_bf16, tensor_fp64,
        tensor_fp32, tensor_fp8 (tensor_int8: OP/s)."""
        if precision not in PRECISIONS:
            raise UsageError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
        return getattr(self, PRECISIONS[precision])

    def clock_scale(self, clock_hz: float | None) -> float | None:
        """Factor that brings datasheet compute peaks (quoted at the boost clock) to `clock_hz`."""
        if not clock_hz or not self.boost_clock_mhz:
            return None
        return clock_hz / (self.boost_clock_mhz * 1e6)

    def mem_clock_scale(self, mem_clock_hz: float | None) -> float | None:
        """Factor that brings the datasheet DRAM bandwidth (quoted at `mem_clock_mhz`) to the
        memory clock a log ran at; None when either is unknown or the logged clock is not in
        the table's convention (above its maximum)."""
        if not mem_clock_hz or not self.mem_clock_mhz:
            return None
        factor = mem_clock_hz / (self.mem_clock_mhz * 1e6)
        return factor if factor <= _MEM_CLOCK_TOLERANCE else None

    def at_clock(self, clock_hz: float | None, mem_clock_hz: float | None = None) -> GpuSpec:
        """This spec at the clocks a log ran at (ncu locks both to base by default, and its
        bandwidth ceilings follow the memory clock): compute peaks scaled by the SM clock, the
        DRAM bandwidth by the memory clock when one is known (the SM clock never sets it)."""
        factor, mem_factor = self.clock_scale(clock_hz), self.mem_clock_scale(mem_clock_hz)
        if factor is None and mem_factor is None:
            return self
        scaled, notes = {}, []
        if factor is not None:
            scaled.update({f: getattr(self, f) * factor for f in PRECISIONS.values()
                           if getattr(self, f) is not None and f not in self.measured})
            notes.append(f"compute peaks scaled to the logged SM clock {clock_hz / 1e6:.0f} MHz (x{factor:.3f})")
        if mem_factor is not None and self.dram_bw is not None and "dram_bw" not in self.measured:
            scaled["dram_bw"] = self.dram_bw * mem_factor
            notes.append(f"DRAM bandwidth scaled to the logged memory clock {mem_clock_hz / 1e6:.0f} MHz "
                         f"(x{mem_factor:.3f})")
        return replace(self, **scaled, notes=" ".join([self.notes, *notes]).strip())

    def with_measured(self, values: dict[str, float], what: str) -> GpuSpec:
        """This spec with peaks a run measured (field -> base units, `what` measured them:
        "roofline.csv"): they win over the datasheet's, never over a user's peaks file (a row
        it overrode or added keeps its values), and are never scaled to a logged clock."""
        if not values or "[overridden by " in self.source or "[from " in self.source:
            return self
        return replace(self, **values, measured=self.measured | frozenset(values), measured_from=what)

    def source_of(self, field: str) -> str:
        """Where a value of this spec comes from: `measured (roofline.csv)` or `datasheet`."""
        return f"measured ({self.measured_from})" if field in self.measured else "datasheet"

    def interconnect(self) -> tuple[str, float] | None:
        """The link collectives between this GPU and its peers in one machine use, and its
        bandwidth per direction (byte/s): NVLink where the board has it (an SXM board's GPUs are
        always linked), else PCIe of its generation and lanes; None when the table knows
        neither."""
        if self.nvlink_bw:
            return "NVLink", self.nvlink_bw
        if self.pcie_gen in PCIE_LANE_BW:
            lanes = self.pcie_lanes or 16
            return f"PCIe {self.pcie_gen}.0 x{lanes}", PCIE_LANE_BW[self.pcie_gen] * lanes
        return None

    def describe(self) -> str:
        return f"{self.key} ({self.arch or 'unknown arch'}): {self.source}"


def family_of_arch(arch: str | None) -> str | None:
    """The architecture family an `arch` cell names: its first word ("Volta GV100" -> "volta",
    "Ada Lovelace AD102" -> "ada", "CDNA2 Aldebaran" -> "cdna2")."""
    if not arch or not arch.split():
        return None
    return arch.split()[0].lower()


def normal_cc(value: object) -> str | None:
    """A compute capability as the table spells it: `8.0`, `gfx90a` (case and blanks do not
    matter; a bare major `8` is `8.0`)."""
    text = str(value).strip().lower() if value is not None else ""
    if not text:
        return None
    return f"{text}.0" if text.isdigit() else text


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
            values[attr] = int(_number(row[col])) if attr in _WHOLE else _number(row[col])
    for col, attr in _TEXT_COLUMNS.items():
        if row.get(col) not in (None, ""):
            values[attr] = str(row[col]).strip()
    if row.get("default_for") not in (None, ""):
        values["default_for"] = _default_kinds(row["default_for"], key, origin)
    if "compute_capability" in values:
        values["compute_capability"] = normal_cc(values["compute_capability"])
    if origin and base is not None:
        values["source"] = f"{values.get('source', base.source)} [overridden by {origin}]"
    elif origin:
        values["source"] = f"{values.get('source', '')} [from {origin}]".strip()
    arch = values.get("arch", base.arch if base else None)
    names = values.get("aliases", base.aliases if base else ()) or (key,)
    values.update(family=family_of_arch(arch), name=names[0], aliases=tuple(dict.fromkeys(names)))
    values.setdefault("label", base.label if base else key)
    values.setdefault("product", base.product if base else key)
    return replace(base, **values) if base else GpuSpec(key=key, **values)


def _default_kinds(cell, key: str, origin: str) -> frozenset[str]:
    items = cell if isinstance(cell, list) else str(cell).split("|")
    kinds = frozenset(item.strip().lower() for item in items if str(item).strip())
    unknown = kinds - set(DEFAULT_KINDS)
    if unknown:
        raise UsageError(f"{origin or 'GPU table'}: {key}: default_for takes {' and '.join(DEFAULT_KINDS)}, "
                         f"not {', '.join(sorted(unknown))}")
    return kinds


def read_tsv(text: str) -> list[dict]:
    return [dict(row) for row in csv.DictReader(io.StringIO(text), delimiter="\t")]
