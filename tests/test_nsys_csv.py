"""nsys `stats --format csv` reports of every header generation, read from the real corpus.
Values were checked by hand against the files."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.families import nsys
from roofreport.families.common.textio import Document, read_head
from roofreport.families.nsys import csv as nsys_csv
from tests.conftest import CORPUS, corpus_path


def parse(*parts: str):
    path = corpus_path(*parts)
    variant = nsys.sniff_csv(read_head(path))
    assert variant is not None, f"{path.name} not sniffed as an nsys CSV report"
    return nsys_csv.parse_csv(Document.open(path), variant)


def _derived_csvs() -> list[str]:
    folder = CORPUS / "derived" / "nsys"
    return sorted(p.name for p in folder.glob("*.csv")) if folder.is_dir() else []


@pytest.mark.parametrize("name", _derived_csvs())
def test_every_derived_report_reads_cleanly(name):
    result = parse("derived", "nsys", name)
    assert result.error is None
    assert [w.code for w in result.warnings] == (["nsys.overlapping-rows"] if "nvtxkernsum" in name else [])
    report = name.rsplit("_", 1)[1].removesuffix(".csv")
    assert result.variant == f"{report} csv"
    rows = sum(result.rows().values()) - result.rows().get("kernels", 0) * (report == "gputrace")
    assert rows == sum(1 for _ in corpus_path("derived", "nsys", name).open()) - 1


def test_2024_gputrace_with_greenctx_and_mb_per_s():
    result = parse("nsys", "csv", "flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv")
    act = result.tables["activities"]
    assert act.height == 2685
    assert dict(act.group_by("kind").len().iter_rows()) == {"kernel": 2482, "memcpy": 122, "memset": 81}
    first = act.row(0, named=True)
    assert first["name"] == "[CUDA memcpy Host-to-Device]"
    assert (first["start_ns"], first["duration_ns"], first["correlation_id"]) == (1949099896, 3552, 142)
    assert first["bytes"] == pytest.approx(38_000)        # 0.038 MB, nsys MB are 10^6 bytes
    assert (first["device"], first["context"], first["stream"]) == ("NVIDIA RTX A4500 (0)", 1, 7)
    assert first["source_line"] == 2
    kernels = result.tables["kernels"]
    assert kernels.height == 2482 and set(kernels["kind"]) == {"launch"} and set(kernels["count"]) == {1}
    assert kernels["launch_id"].is_unique().all()
    assert result.hints.device_name == "NVIDIA RTX A4500"


def test_2022_gputrace_none_literals_and_quoted_commas():
    result = parse("nsys", "csv", "nvfuser_a100_gputrace_2022_None_literals.csv")
    row = result.tables["activities"].row(0, named=True)
    assert row["kind"] == "kernel" and row["bytes"] is None      # `None` in Bytes (MB)
    assert row["name"].startswith("CudaCodeGen::kernel1(CudaCodeGen::Tensor<CudaCodeGen::__half, (int)3>, ")
    assert row["name"].endswith("CudaCodeGen::Tensor<float, (int)3>)")
    assert (row["grid"], row["block"]) == ("(1024, 1, 1)", "(256, 2, 1)")
    assert (row["start_ns"], row["duration_ns"]) == (13253804, 22240)
    assert result.hints.device_name == "NVIDIA A100 80GB PCIe"


def test_2020_gputrace_start_in_seconds_and_bytes_without_unit():
    result = parse("course", "Anoushka21-Cloud-and-MachineLearning", "proj1", "v100", "vgg11",
                   "tmp_nsys_gputrace.csv")
    act = result.tables["activities"]
    first = act.row(0, named=True)
    assert first["start_ns"] == pytest.approx(12.944439e9)
    assert (first["duration_ns"], first["bytes"], first["name"]) == (2400, 6912, "[CUDA memcpy HtoD]")
    kernel = act.filter(pl.col("kind") == "kernel").row(0, named=True)
    assert kernel["name"] == "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)"
    assert (kernel["start_ns"], kernel["duration_ns"]) == (pytest.approx(15.871098e9), 8512)
    assert (kernel["grid"], kernel["block"], kernel["bytes"]) == ("(197, 1, 1)", "(256, 1, 1)", None)
    assert dict(act.group_by("kind").len().iter_rows())["kernel"] == 229
    assert result.hints.device_name == "Tesla V100-SXM2-16GB"


def test_kernel_summary_with_grid_and_block_columns():
    result = parse("derived", "nsys", "cs336_pytorch_lm2.7B_nsys2024.6_gpukernsum.csv")
    k = result.tables["kernels"]
    assert k.height == 29 and set(k["kind"]) == {"summary"}
    first = k.row(0, named=True)
    assert (first["name"], first["count"], first["duration_ns"]) == ("ampere_sgemm_128x64_tn", 640, 1494346884)
    assert (first["grid"], first["block"]) == ("(20, 32, 1)", "(128, 1, 1)")
    # The same kernel name with another launch shape is its own row.
    assert k.filter(pl.col("name") == "ampere_sgemm_128x64_tn")["count"].to_list() == [640, 256, 4]


def test_kernel_summary_keeps_each_rows_printed_min_median_and_max():
    """`Min (ns),Max (ns)` and `Med (ns)` (a .5 where the launches are even) as printed."""
    kernels = parse("derived", "nsys", "cs336_pytorch_lm2.7B_nsys2024.6_gpukernsum.csv").tables["kernels"]
    stats = kernels.filter(pl.col("name") == "ampere_sgemm_128x64_tn").select("min_ns", "median_ns", "max_ns")
    assert stats.rows() == [(1446691.0, 1447716.0, 7121681.0), (5697935.0, 5699438.5, 7050449.0),
                            (5697841.0, 5699519.5, 5699727.0)]
    assert kernels.select("min_ns", "median_ns", "max_ns").null_count().row(0) == (0, 0, 0)


def test_gputrace_launch_rows_have_no_printed_statistics():
    kernels = parse("nsys", "csv", "flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv").tables["kernels"]
    assert kernels.height and kernels.select("min_ns", "median_ns", "max_ns").null_count().row(0) == (kernels.height,) * 3

def test_api_summary():
    result = parse("derived", "nsys", "alpa_jax_rtx3090_nsys2022.1_report1_cudaapisum.csv")
    row = result.tables["api_calls"].row(0, named=True)
    assert (row["kind"], row["name"], row["calls"], row["total_ns"]) == ("summary", "cudaHostAlloc", 33, 16479127)
    assert (row["avg_ns"], row["min_ns"], row["max_ns"]) == (499367.5, 4120, 1182416)


def test_memory_time_summary_goes_to_kernels_by_operation_name():
    result = parse("derived", "nsys", "olcf_hw6_rtx3070_nsys2022_um_gpumemtimesum.csv")
    k = result.tables["kernels"]
    assert k.select("name", "count", "duration_ns").rows() == [
        ("[CUDA Unified Memory memcpy HtoD]", 64, 29131078), ("[CUDA Unified Memory memcpy DtoH]", 64, 26104859)]


def test_nvtx_summary_becomes_regions():
    result = parse("derived", "nsys", "alpa_jax_rtx3090_nsys2022.1_report1_nvtxsum.csv")
    r = result.tables["regions"]
    assert r.select("kind", "name", "count", "duration_ns").rows() == [
        ("nvtx", "NCCL:ncclCommInitRank", 1, 101983845), ("nvtx", "NCCL:ncclCommDestroy", 1, 9881345)]


def test_nvtx_kernel_summary_puts_the_range_in_region():
    result = parse("derived", "nsys", "flame_torch_rtxa4500_nvtxkernsum.csv")
    k = result.tables["kernels"]
    assert k.height == 254
    assert k.filter(pl.col("region").is_null()).height == 23       # `None,None,...`: outside any range
    forward = k.filter(pl.col("region") == "forward").row(0, named=True)
    assert forward["name"].startswith("sm86_xmma_fprop_implicit_gemm_tf32f32")
    assert (forward["count"], forward["duration_ns"]) == (50, 22636383)
    assert [w.code for w in result.warnings] == ["nsys.overlapping-rows"]


def test_two_reports_captured_in_one_file_with_noise(tmp_path):
    """stdout of `nsys stats --format csv` with two reports and tool lines around them."""
    path = tmp_path / "stats_stdout.csv"
    path.write_text(
        "Generating SQLite file report1.sqlite from report1.nsys-rep\n"
        "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2023.4.1/host-linux-x64/reports/cuda_api_sum.py]...\n"
        "\n"
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "90.0,900,3,300.0,300.0,100,500,200.0,cudaMalloc\n"
        "10.0,100,1,100.0,100.0,100,100,0.0,cudaFree\n"
        "\n"
        "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2023.4.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]...\n"
        "\n"
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        '100.0,5000,2,2500.0,2500.0,2000,3000,707.1,"kern(int, float)"\n')
    result = nsys_csv.parse_csv(Document.open(path), nsys.sniff_csv(read_head(path)))
    assert result.error is None
    assert result.tables["api_calls"].select("name", "calls", "source_line").rows() == [
        ("cudaMalloc", 3, 5), ("cudaFree", 1, 6)]
    assert result.tables["kernels"].select("name", "count", "duration_ns", "source_line").rows() == [
        ("kern(int, float)", 2, 5000, 11)]


# Report kinds the corpus holds no CSV of: headers as nsys documents them, rows written here.
SYNTHETIC = {
    "x_osrt_sum.csv": ("Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                       "76.2,654980528678,64,10234070760.6,12481.5,1041,36451572053,16422014166.4,futex\n"),
    "x_nvtx_gpu_proj_trace.csv": ("Name,Projected Start (ns),Projected Duration (ns),Orig Start (ns),"
                                  "Orig Duration (ns),Style,PID,TID,NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack\n"
                                  ":forward,1000,5000,900,4000,PushPop,42,42,12,0,1,1,,:1\n"),
    "x_cuda_api_trace.csv": ("Start (ns),Duration (ns),Name,Result,CorrID,Pid,Tid,T-Pri,Thread Name\n"
                             "1949099000,4120,cudaMalloc_v3020,0,140,64631,64631,20,python\n"),
    "x_gpumemsizesum.csv": ("Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation\n"
                            "13627.435,294,46.352,26.214,0.010,104.858,42.643,[CUDA memcpy Host-to-Device]\n"),
    "x_gputrace.csv": ("Start(ns),Duration(ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem,DymSMem,"
                       "Bytes,Thru(MB/s),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n"
                       "1000,20,5,2,1,1,32,1,1,16,0,0,,,,,Tesla T4 (0),1,7,k\n"),
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_documented_report_headers(tmp_path, name):
    path = tmp_path / name
    path.write_text(SYNTHETIC[name])
    variant = nsys.sniff_csv(read_head(path))
    result = nsys_csv.parse_csv(Document.open(path), variant)
    assert result.error is None
    if name == "x_osrt_sum.csv":       # same columns as cuda_api_sum: the file name decides
        assert variant == "osrtsum csv"
        assert result.tables["api_calls"].select("kind", "name", "calls").row(0) == ("osrt_summary", "futex", 64)
    elif name == "x_nvtx_gpu_proj_trace.csv":
        assert variant == "nvtxgpuproj csv"
        assert result.tables["regions"].select("kind", "name", "start_ns", "duration_ns").row(0) == (
            "nvtx_gpu", ":forward", 1000, 5000)
    elif name == "x_cuda_api_trace.csv":
        assert variant == "apitrace csv"
        assert result.tables["api_calls"].select("kind", "name", "total_ns", "start_ns").row(0) == (
            "trace", "cudaMalloc_v3020", 4120, 1949099000)
    elif name == "x_gpumemsizesum.csv":
        metrics = result.tables["metrics"]
        total = metrics.filter(pl.col("stat") == "total").row(0, named=True)
        assert (total["kernel_name"], total["value"]) == ("[CUDA memcpy Host-to-Device]", pytest.approx(13627.435e6))
        assert metrics.filter(pl.col("metric") == "memory operations")["value"].to_list() == [294]
    else:
        row = result.tables["activities"].row(0, named=True)
        assert (row["start_ns"], row["duration_ns"], row["grid"], row["device"]) == (1000, 20, "(2, 1, 1)", "Tesla T4 (0)")


def test_the_column_mapping_is_data_every_header_maps_once():
    from roofreport.families.nsys.columns import COLUMNS, REPORTS
    headers = [c.header for c in COLUMNS]
    assert len(headers) == len(set(headers))
    fields = {c.field for c in COLUMNS}
    assert all(r.requires <= fields for r in REPORTS)


# -- "no value" marks: the reader is given only those seen at the head of the file ------------

@pytest.mark.parametrize("parts", [
    ("derived", "nsys", "cs336_pytorch_lm2.7B_nsys2024.6_gputrace.csv"),   # None in launch columns
    ("derived", "nsys", "flame_torch_rtxa4500_nvtxkernsum.csv"),            # None in a text column
    ("nsys", "csv", "nvfuser_a100_gputrace_2022_None_literals.csv"),        # both
])
def test_marks_the_head_did_not_show_give_the_same_tables(parts, monkeypatch):
    """With no rows sampled, the reader knows no mark: a text cell's mark is made null after
    the read, a number cell's sends the read back with every mark. Same tables either way."""
    seen = parse(*parts)
    assert seen.error is None and nsys_csv._marks_in(
        corpus_path(*parts).read_text().splitlines()[1:]) == ["None"]
    monkeypatch.setattr(nsys_csv, "_MARK_SAMPLE", 0)
    unseen = parse(*parts)
    assert unseen.error is None and [w.code for w in unseen.warnings] == [w.code for w in seen.warnings]
    assert seen.tables.keys() == unseen.tables.keys()
    for name, table in seen.tables.items():
        assert table.equals(unseen.tables[name]), name


def test_a_text_mark_is_null_wherever_it_stands(tmp_path):
    """Marks in the Name column (quoted too) read as null, like the reader's own null_values."""
    header = "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Device,Ctx,Strm,Name\n"
    row = '{},10,{},1,1,1,32,1,1,GPU (0),1,7,{}\n'
    rows = [row.format(i * 100, i, "kernel_a") for i in range(1, 1500)]
    rows += [row.format(200_000, 1500, '"N/A"'), row.format(200_100, 1501, "-"),
             row.format(200_200, 1502, '""')]
    path = tmp_path / "late_marks_gputrace.csv"
    path.write_text(header + "".join(rows))
    result = nsys_csv.parse_csv(Document.open(path), "gputrace csv")
    assert result.error is None
    names = result.tables["activities"]["name"]
    assert names.len() == 1502 and names.null_count() == 3 and names[:1499].unique().to_list() == ["kernel_a"]
