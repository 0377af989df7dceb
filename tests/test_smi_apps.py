"""nvidia-smi's per-process series, `--query-compute-apps` and `--query-accounted-apps`: one
`samples` row per process and reading, with `pid`, `process_name` and `process_mem_mib`, the
GPU-wide columns null; kept out of the GPU statistics, summed up per process by the analysis."""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import polars as pl

from roofreport.analysis import utilization
from roofreport.tables import schema
from tests.conftest import SAMPLE_LOGS, parse_path, read_samples

DEMO = SAMPLE_LOGS / "a100" / "resnet18" / "nvidia-smi-compute-apps.csv"


def read(tmp_path: Path, text: str, name: str = "apps.csv"):
    return read_samples(tmp_path, text, name, "nvidia-smi")


def test_demo_compute_apps_row_by_row_against_the_csv_module():
    result = parse_path(DEMO, "nvidia-smi")
    assert result.variant == "compute-apps csv" and result.error is None and result.warnings == []
    samples = result.tables["samples"]
    with open(DEMO, newline="") as fh:
        rows = list(csv.reader(fh, skipinitialspace=True))[1:]
    assert samples.select("pid", "process_name", "process_mem_mib", "timestamp").rows() == [
        (int(pid), name, float(mem.removesuffix(" MiB")), datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f"))
        for stamp, _, pid, name, mem in rows]
    assert samples["gpu_index"].unique().to_list() == [0]            # one uuid: GPU 0
    for column in ("util_gpu_pct", "mem_used_mib", "power_w", "gpu_name"):
        assert samples[column].null_count() == samples.height, column
    # each process's readings are numbered on their own
    trainer = samples.filter(pl.col("pid") == 41233)
    assert trainer["elapsed_s"][0] > 0 and trainer["elapsed_s"].is_sorted()


def test_accounted_apps_keep_the_processes_maximum(tmp_path):
    text = ("timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, vgpu_instance, pid, gpu_utilization [%], "
            "mem_utilization [%], max_memory_usage [MiB], time [ms]\n"
            "2024/03/12 15:00:00.100, NVIDIA A100-SXM4-40GB, 00000000:07:00.0, 1562420012345, GPU-aaaa, N/A, "
            "41233, 67 %, 31 %, 6143 MiB, 184112 ms\n"
            "2024/03/12 15:00:00.100, NVIDIA A100-SXM4-40GB, 00000000:0F:00.0, 1562420012346, GPU-bbbb, N/A, "
            "51802, 2 %, 0 %, [N/A], 912 ms\n")
    samples, result = read(tmp_path, text)
    assert result.variant == "accounted-apps csv"
    assert samples.select("gpu_index", "pid", "process_mem_mib", "gpu_name", "util_gpu_pct").rows() == [
        (0, 41233, 6143.0, "NVIDIA A100-SXM4-40GB", None), (1, 51802, None, "NVIDIA A100-SXM4-40GB", None)]


def test_a_loop_of_one_shot_queries_dates_every_process(tmp_path):
    text = ("Tue Mar 12 14:02:41 UTC 2024\npid, process_name, used_gpu_memory [MiB]\n"
            "41233, python, 421 MiB\n40871, python3, 1203 MiB\n"
            "Tue Mar 12 14:02:46 UTC 2024\npid, process_name, used_gpu_memory [MiB]\n"
            "41233, python, 6135 MiB\n40871, python3, 1203 MiB\n")
    samples, result = read(tmp_path, text, "apps.log")
    assert result.warnings == []
    assert samples.select("pid", "elapsed_s", "process_mem_mib").rows() == [
        (41233, 0.0, 421.0), (40871, 0.0, 1203.0), (41233, 5.0, 6135.0), (40871, 5.0, 1203.0)]
    assert samples["gpu_index"].null_count() == 4              # no GPU named: unknown, not GPU 0/1


def test_an_echoed_command_with_aliases_names_headerless_rows(tmp_path):
    text = ("$ nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader -l 5\n"
            "41233, python, 421 MiB\n41233, python, 6135 MiB\n")
    samples, result = read(tmp_path, text, "apps.log")
    assert result.variant == "compute-apps csv (noheader)"
    assert samples.select("pid", "process_name", "process_mem_mib", "elapsed_s").rows() == [
        (41233, "python", 421.0, 0.0), (41233, "python", 6135.0, 5.0)]


def test_process_rows_stay_out_of_the_gpu_statistics():
    gpu = [{"run": "r", "source_file": "q.csv", "source_line": i + 2, "gpu_index": 0, "elapsed_s": float(i),
            "util_gpu_pct": u, "power_w": 100.0} for i, u in enumerate([10.0, 90.0])]
    apps = [{"run": "r", "source_file": "a.csv", "source_line": i + 2, "gpu_index": 0, "elapsed_s": float(i),
             "pid": 7, "process_name": "python", "process_mem_mib": m} for i, m in enumerate([100.0, 300.0, 200.0])]
    samples = pl.concat([schema.conform("samples", pl.DataFrame(rows)) for rows in (gpu, apps)])
    stats = utilization.utilization_stats(samples).row(0, named=True)
    assert (stats["samples"], stats["util_mean"], stats["duration_s"]) == (2, 50.0, 1.0)
    assert utilization.utilization_series(samples)["util_gpu_pct"].to_list() == [10.0, 90.0]
    processes = utilization.process_memory(samples).row(0, named=True)
    assert processes == {"run": "r", "gpu_index": 0, "pid": 7, "process_name": "python", "samples": 3,
                         "first_s": 0.0, "last_s": 2.0, "mem_mean_mib": 200.0, "mem_max_mib": 300.0}
    series = utilization.process_series(samples, bin_s=2.0)
    assert series.select("t_s", "process_mem_mib").rows() == [(0.0, 300.0), (2.0, 200.0)]


def test_a_query_naming_one_quantity_twice_reads_the_first(tmp_path):
    text = ("index, pci.bus_id, uuid, power.draw [W], power.draw.instant [W]\n"
            "0, 00000000:07:00.0, GPU-aaaa, 61.20 W, 75.02 W\n")
    samples, result = read(tmp_path, text, "gpu.csv")
    assert result.error is None and samples.select("gpu_index", "power_w").rows() == [(0, 61.2)]
