"""The methodology appendix: how every number was obtained (docs/methodology.md in short), the peaks
used with their sources from the GPU database, the tool versions seen, and the caveats.
"""

from __future__ import annotations

from collections import Counter

from roofreport.model import bound
from roofreport.report import fmt
from roofreport.report.context import Bullets, Heading, Paragraph, Section, Span
from roofreport.report.tables import cell, table

code = lambda text: Span(text, code=True)  # noqa: E731 - a code span, for readability below

FORMULAS = [
    [Span("FP64 FLOPs = dadd + dmul + 2·dfma, from "), code("smsp__sass_thread_inst_executed_op_{dadd,dmul,dfma}_pred_on.sum"),
     Span("; FP32 and FP16 alike with f*/h*; nvprof "), code("flop_count_dp/sp/hp"), Span(" (FMA already counted twice).")],
    [Span("Tensor-core FLOPs: "), code("sm__ops_path_tensor_src_*.sum"), Span(" (A100 and newer); 512 × "),
     code("sm__inst_executed_pipe_tensor.sum"), Span(" on V100 only. The CUDA-core counters above never see "
     "tensor-core work: a kernel that used tensor cores without a tensor FLOP metric makes the FLOP count "
     "incomplete (shown as ≥).")],
    [Span("DRAM bytes = 32 × "), code("dram__sectors.sum"), Span(" (or "), code("dram__bytes.sum"),
     Span("); nvprof 32 × ("), code("dram_read_transactions + dram_write_transactions"), Span("). L2 from "),
     code("lts__t_sectors/lts__t_bytes"), Span(", L1 from "), code("l1tex__t_sectors/l1tex__t_bytes"), Span(".")],
    [Span("Time: kernel durations from nsys, nvprof or PyTorch (Kineto) traces and summaries when present, else ncu's "),
     code("gpu__time_duration.sum"), Span(" (serialized, clock-locked replays).")],
    [Span("Arithmetic intensity AI = FLOPs / bytes (per memory level); achieved = FLOPs / time; "
          "roof = min(peak, bandwidth × AI); ridge point = peak / bandwidth; % of roof = achieved / roof.")],
    [Span("Ceiling: the peak of the precision doing most FLOPs, × (1 + f) / 2 where the counters give the FMA "
          "share f of its FP instructions (fadd/fmul/ffma; half the peak without FMA), at the clock the time was "
          "measured at: the log's SM frequency, else ncu's locked clock (base by default before 2026.1), else the "
          "SM clock nvidia-smi sampled beside a trace, else boost.")],
    [Span("Bound class, by where the time sits: each counted kernel is on the compute side of its ridge point or "
          f"the memory side; memory- or compute-bound when at least {bound.MOST:.0%} of the counted time is on that "
          f"side, mixed (neither memory- nor compute-bound) otherwise or when the run's AI is within ×/÷{bound.RIDGE_BAND} of the ridge "
          f"point; latency-bound below {bound.LATENCY_PCT:.0f}% of the roof, or below {bound.SHORT_PCT:.0f}% with most "
          f"time in launches under {bound.SHORT_LAUNCH_NS / 1000:.0f} µs; none when the FLOPs are incomplete, the "
          f"point lies above a roof, or the counted kernels cover under {bound.COVERAGE_FLOOR:.0%} of the run's kernel "
          "time (the uncounted rest could hold most of it on either side) and the kernels they name do too. Where the "
          "kernels they name cover enough, the run is classed by kernel name: each uncounted launch takes the side of "
          "the counted launches of its kernel (of its grid and block where counted), a kernel counted on both sides "
          "of its ridge weighs against both, and each kernel weighs by its time in the trace.")],
    [Span("Kernel share: time per kernel summed per category from an ordered list of name rules; the first "
          "matching rule wins; \"other\" (uncategorized) is always shown.")],
]

# Each caveat with what must be present for it to apply (issue 31, item 12: no K80 or MI250 note in
# an A100 report): "ncu", "smi", "amd" (a ROCm log or an AMD GPU), "k80", "mi250", or None (always).
CAVEATS = [
    ("ncu locks the GPU clocks to base by default (--clock-control base) and flushes caches before each "
     "replay (--cache-control all): its kernel times are longer and its DRAM bytes higher than in production. "
     "Datasheet peaks assume the boost clock; they are scaled to the clock the times were measured at (the "
     "logged SM clock, ncu's locked base clock, or nvidia-smi's sampled clock), which each run's roof names.", "ncu"),
    ("ncu serializes kernels and replays each one several times; nsys/nvprof traces give the real timeline.", "ncu"),
    ("MAC vs FLOP: measured FLOPs count an FMA as 2. fvcore, THOP and many papers count multiply-adds "
     "(MACs), so their numbers are about half of these.", None),
    ("FP16 CUDA-core FLOPs from ncu may be under-counted by up to 2× for packed half2 instructions.", "ncu"),
    ("nvidia-smi utilization.gpu is the fraction of time a kernel was running, not SM occupancy.", "smi"),
    ("A Tesla K80 board holds two GPUs; peaks are per GPU (half the board's datasheet values).", "k80"),
    ("An AMD MI250/MI250X holds two GCDs; its peaks are per GCD.", "mi250"),
    ("\"Tensor\" means matrix-core work on both vendors (NVIDIA tensor cores, AMD MFMA). AMD's counters "
     "count wave instructions whatever the execution mask, and a packed FP32/FP16 instruction once: "
     "AMD FP32/FP16 peaks are the non-packed rates.", "amd"),
    ("Datasheet peaks are upper bounds; measured ceilings (e.g. ERT) are lower.", None),
]


def caveats(files: list, gpu_keys: list[str]) -> list[str]:
    """The caveats that apply to these logs and GPUs (`CAVEATS`)."""
    families = {getattr(f, "family", None) for f in files}
    keys = " ".join(gpu_keys).lower()
    present = {"ncu": "ncu" in families, "smi": bool(families & {"nvidia-smi", "smi"}),
               "amd": bool(families & {"rocm", "rocprof", "amd-smi"}) or any(w in keys for w in ("mi1", "mi2", "mi3", "radeon")),
               "k80": "k80" in keys, "mi250": "mi250" in keys}
    return [text for text, needs in CAVEATS if needs is None or present.get(needs, False)]


_PEAK_FIELDS = [("FP64", "fp64"), ("FP32", "fp32"), ("FP16", "fp16"), ("FP64 tensor", "fp64_tensor"),
                ("TF32 tensor", "tf32_tensor"), ("FP16 tensor", "fp16_tensor")]


def methodology_section(files: list, gpu_keys: list[str], db) -> Section:
    section = Section("methodology", "Methodology", appendix=True)
    section.blocks.append(Heading("Formulas"))
    section.blocks.append(Bullets([Paragraph(spans) for spans in FORMULAS]))
    section.blocks.append(Heading("Peaks used"))
    section.blocks += _peaks(gpu_keys, db)
    section.blocks.append(Heading("Tools"))
    section.blocks.append(_tools(files))
    section.blocks.append(Heading("Caveats"))
    section.blocks.append(Bullets([Paragraph.of(text) for text in caveats(files, gpu_keys)]))
    return section


def _peaks(gpu_keys: list[str], db) -> list:
    specs = [db.get(k) for k in gpu_keys if db.get(k) is not None]
    if not specs:
        return [Paragraph.md("No GPU of these logs was found in the GPU database, so no peaks were used. "
                             "Name it with `--gpu` or add it with `--peaks FILE`.", level="warning")]
    rows = []
    for spec in specs:
        rows.append([spec.label or spec.key, spec.arch or "–", spec.compute_capability or "–", fmt.count(spec.sm_count),
                     _mhz(spec.boost_clock_mhz)] + [fmt.rate(getattr(spec, f)) for _, f in _PEAK_FIELDS]
                    + [fmt.bandwidth(spec.dram_bw)])
    # The table's own notes are for its maintainers (how a value was checked, which sources
    # disagreed): the report gives each GPU's sources only.
    sources = [Paragraph([Span(f"{s.label or s.key}: "), Span(s.source or "no source given")]) for s in specs]
    return [table(["GPU", "Architecture", "CC / target", "SMs / CUs#", "Boost clock#"] + [f"{n}#" for n, _ in _PEAK_FIELDS]
                  + ["DRAM#"], rows, css="peaks"), Bullets(sources)]


def _mhz(value) -> str:
    return "–" if value is None else f"{value:.0f} MHz"


def _tools(files: list):
    seen = Counter((f.family, f.tool_version or "version not in the log") for f in files
                   if f.family and f.status != "skipped")
    if not seen:
        return Paragraph.of("No profiler logs were read.")
    if len(seen) == 1:      # one tool: a sentence, not a table's headings around one row
        (family, version), count = next(iter(seen.items()))
        return Paragraph.of(f"{family}, {version}: {fmt.count(count)} file{'s' if count != 1 else ''}.")
    rows = [[family, cell(version), fmt.count(n)] for (family, version), n in sorted(seen.items())]
    return table(["Tool", "Version", "Files#"], rows)
