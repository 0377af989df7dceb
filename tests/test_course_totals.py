"""Run totals and the GPU comparison on the real course folders (issue 15, items 2-4).

* Anoushka21's NYU Cloud & ML project summed its own ncu logs by hand (`ncu-final-metric-*.txt`
  beside each log: TOTALBYTES = every `dram__bytes.sum`, TOTALFLOPS = fadd + fmul + 2 ffma):
  the runs table must agree, and its V100 VGG-13 is memory-bound (15.6 FLOP/B < 17.4).
* Every run's totals are the sum of their parts: one time source, one counted file.
* pramitmallick's and srinidhigoud's K80/P40 runs were stopped by nvprof's --timeout: they are
  flagged cut short (found here by reading the logs) and compared per iteration, with a speedup
  recomputed below from the nvprof files themselves.
* The report's findings and comparison say no "None", no "nan" and give no ratio of unlike things.
"""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.analysis import speedup
from roofreport.report.sections.conclusions import conclusion_text
from tests.conftest import corpus_path
from tests.test_report_render import text_of

ANOUSHKA = ("course", "Anoushka21-Cloud-and-MachineLearning")
TIMED_OUT = ("pramitmallick-examples", "srinidhigoud-examples", "pranshu777-imagenet")


@cache
def _read(*parts: str):
    return roofreport.read(corpus_path(*parts))


@cache
def _analysis(*parts: str):
    return roofreport.analyze(_read(*parts))


def _runs(*parts: str) -> dict[str, dict]:
    return {r["run"]: r for r in _read(*parts).runs.iter_rows(named=True)}


def _authors_sums(path: Path) -> dict[str, float]:
    """TOTALBYTES and TOTALFLOPS of one `ncu-final-metric-*.txt` (the value on the line after)."""
    lines = [line.strip().replace("\\n", "") for line in path.read_text().splitlines()]
    return {key: float(lines[lines.index(key) + 1]) for key in ("TOTALBYTES", "TOTALFLOPS")}


# -- Anoushka21: the authors' hand sums ------------------------------------------------------------

def _anoushka_runs():
    root = corpus_path(*ANOUSHKA)
    found = sorted(root.rglob("ncu-final-metric-*.txt"))
    assert len(found) == 6
    return [(f"proj1/{p.parent.parent.name}/{p.parent.name}", _authors_sums(p)) for p in found]


def test_dram_bytes_of_every_run_are_the_authors_totalbytes():
    runs = _runs(*ANOUSHKA)
    for run, sums in _anoushka_runs():
        assert runs[run]["dram_bytes"] == pytest.approx(sums["TOTALBYTES"], rel=0.01), run
        # In fact within 4 parts per million: the author's awk summed the values as printed,
        # rounded in Kbyte/Mbyte/Gbyte; roofreport reads the same values.
        assert runs[run]["dram_bytes"] == pytest.approx(sums["TOTALBYTES"], rel=5e-6), run


def test_v100_flops_are_the_authors_totalflops():
    """The author summed the FP32 counters; the log also counted a few FP64 ops (dadd, dmul,
    dfma: 0.01 % of the work), which the run's FLOPs include and nothing else."""
    data = _read(*ANOUSHKA)
    runs = _runs(*ANOUSHKA)
    for run, sums in _anoushka_runs():
        if "/v100/" not in run:
            continue
        ncu = data.kernels.filter((pl.col("run") == run) & pl.col("source_file").str.contains("ncu-log"))
        assert ncu["flops_fp32"].sum() == sums["TOTALFLOPS"], run
        others = ncu["flops_fp64"].fill_null(0).sum() + ncu["flops_fp16"].fill_null(0).sum()
        assert runs[run]["flops"] == pytest.approx(sums["TOTALFLOPS"] + others, rel=1e-12), run
        assert runs[run]["flops"] == pytest.approx(sums["TOTALFLOPS"], rel=1e-3), run
        assert runs[run]["flops_complete"] is True


def test_v100_intensities_and_bounds_by_the_authors_sums():
    """Issue 31 item 2: the V100 runs sit at 77-103% of the ridge point with 48-61% of their counted
    time in compute-side kernels: at the ridge (mixed), not memory- or compute-bound. Their ridge is
    that of the FP32 ceiling their instruction mix allows (97% FMA: 98.5% of the 15.7 TFLOP/s peak)."""
    runs = _runs(*ANOUSHKA)
    expected = {"vgg11": (13.4, 0.48), "vgg13": (15.6, 0.58), "vgg19": (17.6, 0.61)}
    for model, (ai, share) in expected.items():
        row = runs[f"proj1/v100/{model}"]
        assert row["arithmetic_intensity"] == pytest.approx(ai, abs=0.05), model
        assert row["peak_flops_per_s"] == 15.7e12 and row["fma_share"] == pytest.approx(0.97, abs=0.01), model
        assert row["ceiling"] == "FP32 at 97% FMA", model
        assert row["ridge_ai"] == pytest.approx(row["ceiling_flops_per_s"] / 900e9)
        assert row["ceiling_flops_per_s"] == pytest.approx(15.7e12 * (1 + row["fma_share"]) / 2)
        assert row["bound"] == "mixed" and row["roof_precision"] == "fp32", model
        assert row["compute_time_share"] == pytest.approx(share, abs=0.005), model
        assert 0.9 < row["bound_coverage"] < 0.96, model     # ncu's counted launches of the nsys trace
        # Achieved = FLOPs / the nsys time of the same ncu-counted launches.
        assert row["counted_time_source"].startswith("nsys trace (matched")
        assert row["achieved_flops_per_s"] == pytest.approx(row["flops"] / (row["counted_time_ns"] * 1e-9))
    assert "intensity at 91% of the ridge point" in runs["proj1/v100/vgg13"]["bound_note"]
    assert runs["proj1/v100/vgg13"]["bound_note"].startswith("58% of the counted time in compute-side kernels")


def test_a100_runs_have_no_bound_class_their_tensor_work_went_uncounted():
    runs = _runs(*ANOUSHKA)
    for model in ("vgg11", "vgg13", "vgg19"):
        row = runs[f"proj1/a100/{model}"]
        assert row["flops_complete"] is False and row["bound"] is None
        assert row["bound_note"].startswith("FLOPs incomplete")


def test_runs_whose_logs_counted_fp64_flops_only_are_lower_bounds_not_zero_work():
    # pranshu777's nvprof runs measured `flop_count_dp` alone: their sgemm/conv kernels count 0
    # double-precision FLOPs, which says nothing of their FP32 work.
    folder = corpus_path("course", "pranshu777-imagenet")
    data = _read("course", "pranshu777-imagenet")
    counted = data.kernels.filter(pl.col("flops_fp64").is_not_null())
    assert counted.height and counted["flops_fp32"].is_null().all()
    dp_only = {f.name for f in folder.iterdir() if f.is_file()
               and '"flop_count_dp"' in f.read_text(errors="replace") and "flop_count_sp" not in f.read_text(errors="replace")}
    runs = data.runs.filter(pl.col("flops").is_not_null())
    assert runs.height and dp_only
    for row in runs.iter_rows(named=True):
        assert row["flops_complete"] is False and row["bound"] is None, row["label"]
        assert "FP32 work was not measured" in row["bound_note"], row["label"]
    html = text_of(_html("course", "pranshu777-imagenet"))
    assert "≥ 0 FLOP" in html and " 0 FLOP " not in html.replace("≥ 0 FLOP", "")
    assert "≥ –" not in html      # no lower bound of a rate that was never measured


def test_the_report_reads_the_runs_table_not_a_second_computation():
    an = _analysis(*ANOUSHKA)
    runs = _read(*ANOUSHKA).runs.sort("run")
    shown = an.runs.sort("run")
    for column in ("kernel_time_ns", "flops", "dram_bytes", "arithmetic_intensity", "achieved_flops_per_s", "bound"):
        assert shown[column].to_list() == runs[column].to_list(), column
    html = _html(*ANOUSHKA)
    text = text_of(html)
    # issue 31 item 2: at the ridge, with the share of time on each side and the counters' coverage
    assert re.search(r"3 runs are neither memory- nor compute-bound \(vgg11 · V100-SXM2-16GB, vgg13 · V100-SXM2-16GB and "
                     r"vgg19 · V100-SXM2-16GB\): arithmetic intensity 13\.4 FLOP/B to 17\.6 FLOP/B against a ridge "
                     r"point of 17\.1 FLOP/B to 17\.2 FLOP/B; .*; 48% to 61% of their counted time in compute-side "
                     r"kernels \(the counters cover 90% to 95% of their kernel time\)", text)
    # (the runs table holds each run's intensity once; the rooflines section adds only its own
    # columns: issue 32, one table per fact) -- and 19.5, a second computation's, appears nowhere
    assert "15.6 FLOP/B" in text_of(_section(html, "runs")) and "19.5 FLOP/B" not in text
    assert "19.5 FLOP/B" not in text_of(_section(html, "rooflines"))


# -- totals are the sum of their parts ------------------------------------------------------------

FOLDERS = [ANOUSHKA, ("course", "pramitmallick-examples"), ("course", "srinidhigoud-examples")]
TRANSFER = r"^\[CUDA mem(cpy|set)"
RANK = {"nsys": 0, "nvprof": 1, "ncu": 2}
FLOP_COLUMNS = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")


@pytest.mark.parametrize("parts", FOLDERS, ids=lambda p: p[-1])
def test_run_totals_are_the_sum_of_their_kernels(parts):
    """Per run: its kernel time is the sum of the kernel rows of one file, the best kind there is
    (a trace before a summary before ncu), transfers apart; its FLOPs and bytes the sums over the
    counted rows of one file."""
    data = _read(*parts)
    families = {f.path: f.family for f in data.files}
    kernels = data.kernels.with_columns(pl.col("source_file").replace_strict(families, default=None).alias("family"))
    checked = 0
    for run in data.runs.iter_rows(named=True):
        mine = kernels.filter(pl.col("run") == run["run"])
        timed = mine.filter(pl.col("duration_ns").is_not_null() & ~pl.col("name").str.contains(TRANSFER))
        if run["kernel_time_ns"] is None:
            assert not timed.height, run["run"]
            continue
        per_file = timed.group_by("source_file", "family").agg(pl.col("duration_ns").sum(), pl.col("count").sum())
        best = per_file.sort(pl.col("family").replace_strict(RANK, default=9), -pl.col("duration_ns")) \
            .row(0, named=True)
        assert run["kernel_time_ns"] == pytest.approx(best["duration_ns"], rel=1e-12), run["run"]
        assert run["kernel_launches"] == best["count"], run["run"]
        counted = mine.filter(pl.col("dram_bytes").is_not_null() | pl.col("flops_fp32").is_not_null())
        if counted.height:
            assert counted["source_file"].n_unique() == 1
            flops = sum(counted[c].fill_null(0).sum() for c in FLOP_COLUMNS)
            assert run["flops"] == pytest.approx(flops, rel=1e-12)
            assert run["counted_kernels"] == counted["count"].sum()
            assert run["dram_bytes"] == pytest.approx(counted["dram_bytes"].sum(), rel=1e-12)
        checked += 1
    assert checked >= 6


# -- cut short: found by reading the logs --------------------------------------------------------

@pytest.mark.parametrize("folder", TIMED_OUT)
def test_runs_stopped_by_nvprofs_timeout_or_the_batch_system_are_cut_short(folder):
    data = _read("course", folder)
    runs = _runs("course", folder)
    flagged = 0
    for f in data.files:
        if not f.run or ", " in f.run or f.family != "nvprof":
            continue
        text = Path(f.path).read_text(encoding="utf-8", errors="replace")
        # nvprof's message, wherever the line holds it (after program output, in a re-saved TSV)
        stopped = bool(re.search(r"==\d+==\s*Execution timeout", text)) or (
            "DUE TO TIME LIMIT" in text and f.status == "ok")
        if stopped or f.status == "ok":
            assert runs[f.run]["cut_short"] is stopped, f.path
        if stopped:
            assert runs[f.run]["cut_short_reason"], f.path
            flagged += 1
    assert flagged > 20


def test_a_time_limit_after_the_results_names_the_batch_system():
    runs = _read("course", "pramitmallick-examples").runs
    row = runs.filter(pl.col("run").str.ends_with("final/out.vgg16_8_0.01_p40_full.775823")).row(0, named=True)
    assert row["cut_short"] and row["kernel_time_ns"] > 0
    # The first thing the log says stopped it: nvprof's time-out (line 4), then slurm (the last line).
    assert row["cut_short_reason"] == ("nvprof: Execution timeout, stopping the application... "
                                       "[out.vgg16_8_0.01_p40_full.775823 line 4]")


# -- the same model on two GPUs, by hand ---------------------------------------------------------

def _nvprof_summary(path: Path) -> tuple[float, int]:
    """(kernel seconds, launches of the loss's backward kernel) from the file's own GPU activities
    CSV, read with plain polars: an oracle independent of roofreport's reader."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Type","Time(%)"'))
    body = [lines[start]] + [line for line in lines[start + 2:] if line.startswith('"GPU activities"')]
    table = pl.read_csv(io.StringIO("\n".join(body)))
    unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[lines[start + 1].split(",")[2]]   # the units row
    kernels = table.filter(~pl.col("Name").str.contains(TRANSFER))
    loss = table.filter(pl.col("Name").str.contains("ClassNLLCriterion_updateGradInput"))
    return kernels["Time"].sum() * unit, int(loss["Calls"].sum())


BY_HAND = {
    "pramitmallick-examples": ("imagenet/final/out.alexnet_16_0.01_k80_backprop.805231",
                               "imagenet/final/out.alexnet_16_0.01_p40_backprop.805116"),
    "srinidhigoud-examples": ("imagenet/results/backprop/k80/out.alexnet_16_0.01_k80_backprop.805231",
                              "imagenet/results/backprop/p40/out.alexnet_16_0.01_p40_backprop.805116"),
}


@pytest.mark.parametrize("folder", sorted(BY_HAND))
def test_the_same_model_on_two_gpus_gives_the_speedup_computed_by_hand(folder):
    """alexnet, batch 16, backward pass only (cudaProfilerStart/Stop around it): both runs hit
    nvprof's --timeout, the K80 after 148 steps, the P40 after 90. Per step: 53.3 ms on the K80,
    18.5 ms on the P40, so the P40 is 2.89x faster (checked by hand from the two files)."""
    root = corpus_path("course", folder)
    k80_file, p40_file = (root / rel for rel in BY_HAND[folder])
    (k80_s, k80_steps), (p40_s, p40_steps) = _nvprof_summary(k80_file), _nvprof_summary(p40_file)
    assert (k80_steps, p40_steps) == (148, 90)
    by_hand = (k80_s / k80_steps) / (p40_s / p40_steps)
    assert by_hand == pytest.approx(2.887, abs=0.001)
    runs = _read("course", folder).runs
    for path, seconds, steps in ((k80_file, k80_s, k80_steps), (p40_file, p40_s, p40_steps)):
        row = runs.filter(pl.col("run") == str(path.relative_to(root))).row(0, named=True)
        assert row["cut_short"] and row["iterations"] == steps
        assert row["time_per_iteration_ns"] == pytest.approx(seconds * 1e9 / steps, rel=1e-6)
    pairs = _analysis("course", folder).speedups.filter(
        (pl.col("model") == "alexnet") & pl.col("config").str.contains(r"^backprop · bs 16( ·|$)"))
    row = pairs.row(0, named=True)
    # The K80 job ran DataParallel on 4 GPUs (its job script's --gres), the P40 job on one: the K80's
    # summary sums its 4 GPUs' kernel time, so the two compare per GPU (issue 31, item 5), never
    # a 4-GPU sum against one GPU: 53.3 / 4 = 13.3 ms a step per K80 GPU against the P40's 18.5 ms.
    assert (row["faster"], row["slower"], row["basis"]) == ("K80", "P40", f"{speedup.PER_ITERATION} per GPU")
    assert row["speedup"] == pytest.approx(4 / by_hand, rel=1e-6)


@pytest.mark.parametrize("folder", sorted(BY_HAND))
def test_every_model_is_compared_across_the_two_gpus(folder):
    """Per model and experiment (a mean never spans loss_only, backprop and full): every model is
    compared in backprop and full, at 8 configurations or more in all. One GPU against one, the
    P40 always wins; the backprop jobs ran on 4 K80s against one P40, so they compare per GPU and
    say so (issue 31, item 5), whichever wins."""
    summary = _analysis("course", folder).gpu_summary.filter(pl.col("configs") > 0)
    per_model = summary.group_by("model").agg(pl.col("configs").sum(), pl.col("experiment"))
    assert sorted(per_model["model"].to_list()) == ["alexnet", "resnet18", "vgg16"]
    assert per_model["configs"].min() >= 8
    assert all({"backprop", "full"} <= set(experiments) for experiments in per_model["experiment"].to_list())
    per_gpu = pl.col("basis").str.ends_with("per GPU")
    assert summary.filter(pl.col("experiment") == "backprop").select(per_gpu.all()).item()
    one_to_one = summary.filter(~per_gpu)
    assert one_to_one.height and (one_to_one["faster"] == "P40").all() \
        and one_to_one.select((pl.col("speedup_min") > 1).all()).item()


# -- what the report says: no None, no nan, no ratio of unlike things -----------------------------

@cache
def _html(*parts: str) -> str:
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="totals-")) / "report.html"
    roofreport.build_report(_analysis(*parts), out)
    return out.read_text(encoding="utf-8")


def _section(html: str, name: str) -> str:
    """One body section's HTML, up to the next section (the body's order may change)."""
    start = html.index(f'<section id="{name}"')
    return html[start:html.index("<section ", start + 1)]


@pytest.mark.parametrize("parts", FOLDERS, ids=lambda p: p[-1])
def test_findings_and_comparison_say_no_none_no_nan_and_no_unlike_ratio(parts):
    html = _html(*parts)
    findings = text_of(html[html.index('<section id="findings"'):html.index('<section id="inputs"')])
    comparison = text_of(_section(html, "comparison"))
    runs = text_of(_section(html, "runs"))
    for text in (findings, comparison, runs):
        assert not re.search(r"\bNone\b|\bnan\b|\bNaN\b|\binf\b", text)
    an = _analysis(*parts)
    # Page 1 opens with the conclusions: which GPU is faster, by how much (their first sentence)
    # and why (what follows; its peak ratios are no speedups).
    opening = [conclusion_text(row) for row in an.experiment_conclusions.iter_rows(named=True)]
    assert opening and findings.strip().startswith("Findings " + opening[0])
    which = " ".join(text.split(". ", 1)[0] for text in opening)
    # Every speedup printed is one of a comparable pair: no 172281x.
    ratios = [float(r) for r in re.findall(r"([\d.]+)×", comparison + which)]
    compared = an.speedups.filter(pl.col("comparable"))
    assert ratios and max(ratios) <= compared["speedup"].max() * 1.05     # printed with 2 digits
    assert all(f"{r['faster']} " in comparison for r in compared.iter_rows(named=True))
    # Workloads without a comparable pair are counted in the list of what was not compared, and
    # are no row of the time table.
    apart = an.speedups.filter(~pl.col("comparable"))
    listed = sum(int(n) for n in re.findall(r"(\d+) workloads? \(", comparison))
    assert listed == apart.height
    start = html.index("of the same work on each GPU")
    table = text_of(html[start:html.index("</table>", start)])
    for model, config in apart.join(compared, on="config_key", how="anti").select("model", "config").iter_rows():
        assert f" {model} {config} " not in table, (model, config)


def test_uncounted_tensor_kernels_are_listed_beside_the_chart_with_their_time_share_not_placed():
    """Issue 31 item 10: the A100's TF32 GEMMs, whose tensor work no counter counted, sit at AI
    0.0067-0.27 FLOP/B, orders of magnitude from where they ran; they are listed with their share of
    the run's kernel time, and every lower bound keeps its "≥" (hover, tables, AI column)."""
    an = _analysis(*ANOUSHKA)
    off = {r["short_name"]: r for r in an.off_chart.filter(pl.col("run") == "proj1/a100/vgg11").iter_rows(named=True)}
    gemm = off["xmma_new::gemm::kernel"]
    kernel_time = _runs(*ANOUSHKA)["proj1/a100/vgg11"]["kernel_time_ns"]
    assert gemm["launches"] == 21 and gemm["time_share"] == pytest.approx(gemm["time_ns"] / kernel_time)
    assert 0.39 < gemm["time_share"] < 0.41 and gemm["ai_dram"] < 0.3
    assert an.off_chart["run"].str.contains("v100").sum() == 0          # the V100's FP32 work was counted
    html = _html(*ANOUSHKA)
    rooflines = _section(html, "rooflines")
    text = text_of(rooflines)
    assert "Off the chart: tensor-core kernels with uncounted FLOPs" in text
    assert "xmma_new::gemm::kernel 21 8.39 ms 40.0 % ≥ 0.184 FLOP/B ≥ 30.4 GFLOP/s" in text
    assert 'data-name="xmma_new::gemm::kernel"' not in rooflines and 'data-name="cutlass::Kernel"' not in rooflines
    assert 'data-ai="≥ 1.20 FLOP/B"' in rooflines                     # the A100 run's own point, a lower bound
    assert "≥ 1.20 FLOP/B" in text_of(_section(html, "runs"))          # the AI column
