"""Page 1's conclusions in words: per experiment and pair of GPUs, which is faster, by how much
and why (`conclusions.experiment_conclusions`, every number and every cause computed there).

One bullet per experiment and pair: the models with their geometric-mean speedups and ranges,
then the reasons the logs give, most telling first: how many GPUs each side's time is summed
over and what ran between them (collectives and their share), tensor cores, whether the speedup
stays within the GPUs' peak ratios and, where it exceeds them, the likely cause or the log that
would tell; setup left apart; ncu's clock-locked replays beside the speedup they change. Each
run's bound is not said here: page 1's bound bullets say it once, with the share of time that
gave it (`findings.bound_findings`), and the FLOP counts that miss tensor-core work have their
own bullet (`findings.incomplete_findings`).
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import conclusions as why, reasons, speedup
from roofreport.report import fmt
from roofreport.report.context import Paragraph, Span

SETUP_WORTH_SAYING = 0.2      # share of GPU time in one-time copies that page 1 mentions
_PARALLELISM = {
    reasons.SINGLE_PROCESS: ", one process driving them as PyTorch's DataParallel does (weights broadcast "
                            "and gradients reduced to one GPU every step)",
    reasons.ALL_REDUCE: ", data-parallel with all-reduce (DistributedDataParallel, Horovod)",
    reasons.SHARDED: ", data-parallel and sharded (FSDP, ZeRO)",
    reasons.PIPELINE: ", pipeline-parallel (send/recv between stages)",
    reasons.TENSOR: ", tensor-parallel or hybrid (all-reduce within groups smaller than the job)",
}
_WOULD_TELL = {
    why.TRACE: "a kernel trace of both runs (nsys profile, nvprof --print-gpu-trace) would show which "
               "kernels differ",
    why.DEVICE_TRACE: "a trace of both runs with their devices (nvprof --print-gpu-trace --csv, nsys profile) would "
                      "show how many GPUs each used and which kernels differ",
}


def conclusion_texts(rows: pl.DataFrame) -> list[str]:
    """The bullet of each row of `experiment_conclusions`, each finding once: a pair's GPUs are
    said in its first bullet only (models faster the other way get a bullet of their own)."""
    out, said = [], set()
    for row in rows.iter_rows(named=True):
        pair = (row["experiment"], *sorted((row["faster"], row["slower"])))
        out.append(conclusion_text(row, gpus_said=pair in said))
        said.add(pair)
    return out


def conclusion_paragraphs(rows: pl.DataFrame) -> list[Paragraph]:
    """One paragraph per row of `experiment_conclusions`."""
    out = []
    for row, text in zip(rows.iter_rows(named=True), conclusion_texts(rows)):
        lead = f"{row['experiment']}:" if row["experiment"] else ""
        spans = [Span(lead, strong=True), Span(text[len(lead):])] if lead and text.startswith(lead) else [Span(text)]
        out.append(Paragraph(spans))
    return out


def conclusion_text(row: dict, gpus_said: bool = False) -> str:
    """The whole bullet of one experiment and pair of GPUs (module docstring); `gpus_said`: a
    bullet before it said on how many GPUs this pair ran (models faster the other way)."""
    parts = [_which(row, explain=not gpus_said)]
    parts += [text for text in (None if gpus_said else _gpus(row), _tensor(row), _peaks(row), _thin(row),
                                _setup(row), _locked(row)) if text]
    return " ".join(parts)


def _which(row: dict, explain: bool = True) -> str:
    """"full: the P40 is faster than the K80 for alexnet 3.8× (2.1× to 6.3×, 5 configurations)
    and vgg16 5.9× (...), on time per iteration.\""""
    models = []
    for model, mean, low, high, configs in zip(row["models"], row["model_speedups"], row["model_speedup_min"],
                                               row["model_speedup_max"], row["model_configs"]):
        spread = f" ({fmt.ratio(low)} to {fmt.ratio(high)}, {configs} configurations)" if configs > 1 else ""
        models.append(f"{model} {fmt.ratio(mean)}{spread}")
    lead = f"{row['experiment']}: the" if row["experiment"] else "The"
    faster, slower = row["faster"], row["slower"]
    if row.get("measure") == speedup.GPU_TIME_RATIO:
        # one side's time is summed over several GPUs, the other's count is unknown: no speedup
        text = f"{lead} {faster} runs used less GPU time than the {slower} runs for {fmt.listing(models)}"
        if row["faster_in"] < row["configs"]:
            text += f" (more in {row['configs'] - row['faster_in']} of {row['configs']} configurations)"
        return text + (f", a ratio of GPU time ({row['basis']}), not a speedup: the two jobs' GPU counts differ or "
                       "are not known." if row["basis"] else ".")
    if row.get("faster_gpus_count") and row.get("slower_gpus_count"):
        faster = f"{faster} jobs on {_gpus_count(row['faster_gpus_count'])}"
        slower = f"{slower} jobs on {_gpus_count(row['slower_gpus_count'])}"
        text = f"{lead} {faster} are faster than the {slower} for {fmt.listing(models)}"
    else:
        text = f"{lead} {faster} is faster than the {slower} for {fmt.listing(models)}"
    if row["faster_in"] < row["configs"]:
        text += f" (the {row['slower']} is faster in {row['configs'] - row['faster_in']} of {row['configs']} configurations)"
    basis = row["basis"] or ""
    if basis.endswith(speedup.PER_GPU) and explain:
        basis += " (each job's kernel time summed over its GPUs, divided by their number)"
    return text + (f", on {basis}." if basis else ".")


def _n_of(count: int, gpu: str) -> str:
    """"4 K80s", "one P40"."""
    return f"one {gpu}" if count == 1 else f"{count} {gpu}s"


def _gpus_count(count: int) -> str:
    return f"{count} GPU{'s' if count > 1 else ''}"


def _gpus(row: dict) -> str | None:
    """How many GPUs each side's time is summed over, and the collectives between them."""
    sides = [(row[s], row[f"{s}_multi_gpu"], row[f"{s}_gpus"], row[f"{s}_gpus_source"], row[f"{s}_collectives"],
              row[f"{s}_parallelism"], row[f"{s}_communication_share_min"], row[f"{s}_communication_share_max"])
             for s in ("faster", "slower")]
    several = [side for side in sides if side[1]]
    if not several:
        return None
    how = _PARALLELISM.get(several[0][5]) if len({side[5] for side in several}) == 1 else None
    if len(several) == 2:
        count = several[0][2] if several[0][2] == several[1][2] and several[0][2] else None
        shares = " and ".join(f"{_range(low, high)} of the {gpu}'s" for gpu, _, _, _, _, _, low, high in several)
        summed = "the elapsed times are the whole jobs'" if (row["basis"] or "").startswith(speedup.ELAPSED) \
            else "each time is summed over the GPUs"
        return (f"Both ran on {count or 'several'} GPUs{how or ''}: NCCL {_collectives(several)} kernels take "
                f"{shares} kernel time{_asked(several)}; {summed}.")
    multi = several[0]
    single = next(side for side in sides if side is not multi)
    one = "one GPU" if single[1] is False else "an unknown number of GPUs"
    count = f"{multi[2]} GPUs" if multi[2] else "several GPUs"
    text = (f"The {multi[0]} jobs ran on {count}{how or ''}: NCCL {_collectives([multi])} kernels take "
            f"{_range(multi[6], multi[7])} of their kernel time{_asked([multi])}; the {single[0]} jobs show no "
            f"collectives ({one}).")
    if row.get("faster_gpus_count") or (row["basis"] or "").startswith(speedup.ELAPSED):
        return text      # compared as jobs: the lead sentence says on how many GPUs each ran
    return text + f" The {multi[0]}'s time is summed over its {count}, the {single[0]}'s is not."


def _collectives(sides: list[tuple]) -> str:
    kinds = list(dict.fromkeys(k.strip() for side in sides for k in (side[4] or "collectives").split(",")))
    return " and ".join(kinds)


def _asked(sides: list[tuple]) -> str:
    if any(side[3] == "job script" for side in sides):
        counts = sorted({side[2] for side in sides if side[3] == "job script"})
        return f" (the job scripts ask for {' and '.join(str(c) for c in counts)} GPUs)"
    return ""


def _tensor(row: dict) -> str | None:
    high = row["faster_tensor_share_max"] or 0.0
    other = row["slower_tensor_share_max"] or 0.0
    if max(high, other) < why.TENSOR_GAP:
        return None
    said = []
    for side in ("faster", "slower"):
        low, top = row[f"{side}_tensor_share_min"], row[f"{side}_tensor_share_max"]
        said.append(f"{_range(low, top)} of the {row[side]}'s" if top else f"none of the {row[side]}'s")
    return f"Tensor-core kernels take {' and '.join(said)} kernel time."


def _peaks(row: dict) -> str | None:
    ratio = row["peak_ratio"]
    if ratio is None:
        return None
    precision = row["slower_roof_precision"]
    low, high = row.get("peak_ratio_compute_min"), row.get("peak_ratio_compute_max")
    if precision is None and low is not None and high is not None and fmt.ratio(low) != fmt.ratio(high):
        # configurations judged at different precisions (FP32 vgg11, FP16 tensor resnet18): one
        # precision's name on the median ratio would misname the others
        compute = f"{fmt.ratio(low)} to {fmt.ratio(high)} compute at each run's precision"
    else:
        compute = f"{fmt.ratio(row['peak_ratio_compute'])} {_precision_name(precision or 'fp32')} compute"
    ratios = f"{compute}, {fmt.ratio(row['peak_ratio_dram'])} DRAM bandwidth" + _clocks(row)
    whose = f"the {row['faster']}'s peak ratios over the {row['slower']}"
    if row.get("faster_gpus_count") and row.get("slower_gpus_count"):
        whose = (f"the peak ratios of {_n_of(row['faster_gpus_count'], row['faster'])} over "
                 f"{_n_of(row['slower_gpus_count'], row['slower'])}")
    if not row["exceeding"]:
        return f"That is within {whose} ({ratios})."
    many = row["configs"] > 1
    head = (f"{row['exceeding']} of {row['configs']} speedups exceed{'s' if row['exceeding'] == 1 else ''}"
            if many else "The speedup exceeds")
    text = f"{head} {whose} ({ratios}" + \
        (f"; up to {fmt.ratio(row['exceeding_max'])})" if many else ")")
    return f"{text}: {_cause(row)}"


def _precision_name(precision: str) -> str:
    """"FP32", "FP16 tensor", and "tensor/matrix-core" for a roof of tensor work whose input type is
    not named (NVIDIA's tensor cores, AMD's matrix cores): never "TENSOR"."""
    if precision == "tensor":
        return "tensor/matrix-core"
    return _PRECISION.get(precision, precision.upper())


def _clocks(row: dict) -> str:
    """", at the base clock 585 MHz on the T4 and the boost clock 1530 MHz on the V100": the clocks
    the peak ratios are at (model/clocks.py), said where either is not the boost clock."""
    clocks = [(row.get(f"{side}_roof_clock") or "").split(" (")[0].split(",")[0].split(":")[0]
              for side in ("faster", "slower")]
    if not all(clocks) or all(c.startswith("boost clock") for c in clocks):
        return ""
    return f", at the {clocks[0]} on the {row['faster']} and the {clocks[1]} on the {row['slower']}"


def _cause(row: dict) -> str:
    cause = row["cause"]
    if cause == why.GPU_COUNT:
        return "likely because the two times are summed over different numbers of GPUs."
    if cause == why.TENSOR_CORES:
        return f"likely the {row['faster']}'s tensor cores{_tensor_peak(row)}."
    if cause == why.KERNEL_MIX:
        basis = row["basis"] or ""
        per = " per iteration" if basis.startswith(speedup.PER_ITERATION) else ""
        per += " and GPU" if per and basis.endswith(speedup.PER_GPU) else ""
        text = (f"likely the kernels: {row['cause_category']} kernels take {fmt.duration(row['cause_slower_ns'])}{per} on "
                f"the {row['slower']} ({fmt.count(row['cause_slower_launches'])} launches) against "
                f"{fmt.duration(row['cause_faster_ns'])} on the {row['faster']} "
                f"({fmt.count(row['cause_faster_launches'])})")
        fast, slow = row["cause_faster_launches"] or 0, row["cause_slower_launches"] or 0
        if slow >= 2 * max(fast, 1):
            text += ": the libraries ran other algorithms on the two GPUs"
        return text + "."
    return f"the logs do not say why; {_WOULD_TELL.get(row['would_tell'], _WOULD_TELL[why.TRACE])}."


def _thin(row: dict) -> str | None:
    """Speedups resting on a handful of iterations or on an autotuning first iteration."""
    if not row.get("thin"):
        return None
    many = row["configs"] > 1
    head = f"{row['thin']} of {row['configs']} speedups rest" if many else "The speedup rests"
    return f"{head} on thin evidence: {row['thin_why'].split('; ')[0]}."


_PRECISION = {"tensor_tf32": "TF32 tensor", "tensor_fp16": "FP16 tensor", "tensor_bf16": "BF16 tensor",
              "tensor_fp64": "FP64 tensor"}


def _tensor_peak(row: dict) -> str:
    """": its TF32 tensor peak of 156 TFLOP/s is 9.9× the V100's FP32 peak of 15.7 TFLOP/s":
    precision against precision, never one GPU's "peak" against another's."""
    if not row.get("tensor_peak_ratio"):
        return ""
    mine = _PRECISION.get(row.get("tensor_peak_precision") or "", "tensor")
    theirs = (row.get("slower_roof_precision") or "fp32").upper()
    slower_peak = (row["tensor_peak_flops_per_s"] / row["tensor_peak_ratio"]) if row.get("tensor_peak_flops_per_s") else None
    if not row.get("tensor_peak_flops_per_s") or not slower_peak:
        return f": its {mine} peak is {fmt.ratio(row['tensor_peak_ratio'])} the {row['slower']}'s {theirs} peak"
    return (f": its {mine} peak of {_tflops(row['tensor_peak_flops_per_s'])} is {fmt.ratio(row['tensor_peak_ratio'])} "
            f"the {row['slower']}'s {theirs} peak of {_tflops(slower_peak)}")


def _tflops(value: float) -> str:
    tera = value / 1e12
    return f"{tera:.3g} TFLOP/s"


def _setup(row: dict) -> str | None:
    high = max(row["faster_setup_share_max"] or 0.0, row["slower_setup_share_max"] or 0.0)
    if high < SETUP_WORTH_SAYING:
        return None
    low = min(v for v in (row["faster_setup_share_min"], row["slower_setup_share_min"]) if v is not None)
    return (f"Copies before the first kernel (the weights uploaded once) take {_range(low, high)} of the GPU time: "
            "set apart, the speedups compare kernel time.")


def _locked(row: dict) -> str | None:
    locked = [row[side] for side in ("faster", "slower") if row[f"{side}_clock_locked"]]
    if not locked:
        return None
    return (f"The {' and '.join(locked)} times are ncu's replays, kernel by kernel at locked base clocks: the runs "
            "themselves were faster, and the speedup may differ (an nsys or nvprof trace of the same runs gives "
            "their real times).")


def _range(low, high, percent: bool = False) -> str:
    """A share range to whole percents: "12 % to 47 %", "44 %"."""
    return fmt.value_range([low, high], (lambda v: fmt.percent(v, 0)) if percent else (lambda v: fmt.share(v, 0)))
