"""AMD ROCm CSVs into the shared tables: every layout the tools write (rocprof v1 `results.csv`
and `*.stats.csv`; rocprofv2's `results_<pid>.csv` and traces; rocprofv3's kernel trace, counter
collection, stats, API and copy traces and agent info, across the column spellings of ROCm
6.2-7.x; rocprof-compute workload folders; rocm-smi and amd-smi series), written here by hand
from the tools' sources and docs (sample_logs/README.md names them), in more than one version,
cut short, with CRLF line ends and with broken rows: rows are counted as a person would, and a
bad row costs only itself."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from roofreport.families import rocm
from roofreport.families.common.textio import read_head
from roofreport.families.rocm import columns, header
from tests.conftest import SAMPLE_LOGS, corpus_path, parse_path

AMD = SAMPLE_LOGS / "amd"

# -- the layouts, as the tools write them ------------------------------------------------------

# rocprof v1, ROCm 5.x-6.x (`arch_vgpr`, `accum_vgpr`, `wave_size`), counters and --stats timing
V1_RESULTS = """\
Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,wave_size,sig,obj,SQ_WAVES,SQ_INSTS_VALU_FMA_F64,SQ_INSTS_VALU_ADD_F64,FETCH_SIZE,WRITE_SIZE,DispatchNs,BeginNs,EndNs,CompleteNs,DurationNs
0,"void stencil<double, 3>(double const*, double*, int) [clone .kd]",0,0,0,4134249,4134249,1048576,256,0,0,32,0,24,64,"0x0","0x7f2a3a720ec0",16384,16384,1024,8192.000000,8192.000000,1411987252036982,1411987252061945,1411987252082105,1411987252094040,20160
1,"Cijk_Ailk_Bljk_DB_MT64x64x16 [clone .kd]",0,0,1,4134249,4134249,65536,256,16384,0,128,64,80,64,"0x0","0x7f2a3a720f00",256,128,0,4096.000000,2048.000000,1411987252100000,1411987252110000,1411987252150000,1411987252160000,40000
2,"void stencil<double, 3>(double const*, double*, int) [clone .kd]",1,0,2,4134249,4134249,1048576,256,0,0,32,0,24,64,"0x0","0x7f2a3a720ec0",16384,16384,1024,8192.000000,8192.000000,1411987252170000,1411987252180000,1411987252200500,1411987252210000,20500
"""
# rocprof v1, ROCm 4.x (`vgpr`, `sgpr`, `fbar`), timestamps only (`--timestamp on`, no counters)
V1_OLD_TRACE = """\
Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,sgpr,fbar,sig,obj,DispatchNs,BeginNs,EndNs,CompleteNs
0,"MatrixTranspose(float*, float*, int) [clone .kd]",1,0,0,24813,24813,1048576,16,0,0,8,16,0,0x0,0x7f6f1e4e9580,7437612315632946,7437612315658717,7437612315740157,7437612315742437
1,"MatrixTranspose(float*, float*, int) [clone .kd]",1,0,2,24813,24813,1048576,16,0,0,8,16,0,0x0,0x7f6f1e4e9580,7437612316632946,7437612316658717,7437612316741157,7437612316742437
"""
V1_STATS = """\
"Name","Calls","TotalDurationNs","AverageNs","Percentage"
"Cijk_Ailk_Bljk_DB_MT64x64x16 [clone .kd]",1,40000,40000,49.68944099378882
"void stencil<double, 3>(double const*, double*, int) [clone .kd]",2,40660,20330,50.31055900621118
"""
V1_HIP_STATS = """\
"Name","Calls","TotalDurationNs","AverageNs","Percentage"
"hipMemcpy",2,1830000,915000,61.0
"hipLaunchKernel",3,1170000,390000,39.0
"""
# rocprofv2's file plugin: header, blank line, rows (`results_<pid>.csv`, counters after Correlation_ID)
V2_RESULTS = """\
Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID,SQ_WAVES,SQ_INSTS_VALU_MFMA_F16,SQ_INSTS_MFMA

1,1,1,24813,24813,1048576,256,0,0,8,0,16,64,"vecAdd(float*, float*, float*, int)",7437612315658717,7437612315740157,1,16384,0,0
2,1,1,24813,24813,65536,256,16384,0,128,128,80,64,"Cijk_Ailk_Bljk_HB_MT128x128x32_MI32x32x8x1",7437612315800000,7437612315900000,2,1024,40960,40960
"""
V2_HIP_API = """\
Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID

HIP_API_DOMAIN,"hipMalloc",7437612315000000,7437612315010000,1
HIP_API_DOMAIN,"hipLaunchKernel",7437612315600000,7437612315605000,2
"""
V2_HCC_OPS = """\
Domain,Operation,Kernel_Name,Start_Timestamp,Stop_Timestamp,Correlation_ID

HIP_OPS_DOMAIN,"CopyHostToDevice",,7437612315100000,7437612315500000,3
HIP_OPS_DOMAIN,"KernelExecution","vecAdd(float*, float*, float*, int)",7437612315658717,7437612315740157,4
HIP_OPS_DOMAIN,"CopyDeviceToHost",,7437612315900000,7437612316100000,5
"""
# rocprofv3, ROCm 6.2 (no Stream_Id) and 6.3+ (Stream_Id)
V3_TRACE_62 = """\
"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"
"KERNEL_DISPATCH",1,1,69,1,16,"void addition_kernel<float>(float*, float const*, float const*, int, int)",1451,8819330200067564,8819330200116308,0,0,64,1,1,1024,1024,1
"KERNEL_DISPATCH",1,2,69,5,16,"void addition_kernel<float>(float*, float const*, float const*, int, int)",1484,8819330200118678,8819330200219573,0,0,64,1,1,1024,1024,1
"KERNEL_DISPATCH",1,1,69,2,19,"subtract_kernel(float*, float const*, float const*, int, int)",1459,8819330200120456,8819330200223721,0,0,64,1,1,1024,1024,1
"""
V3_TRACE_63 = """\
"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"
"KERNEL_DISPATCH",2,1,1,21228,1,11,"void addition_kernel<float>(float*, float const*, float const*, int, int)",1937,2414192765353337,2414192765369494,0,0,64,1,1,1024,1024,1
"KERNEL_DISPATCH",2,2,2,21228,2,14,"subtract_kernel(float*, float const*, float const*, int, int)",1945,2414192765424862,2414192765435326,0,0,64,1,1,1024,1024,1
"""
# counter collection: ROCm 6.2 (no Kernel_Id column order change, no timestamps) and 6.4+ ("Agent 1")
V3_COUNTERS_62 = """\
"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","SGPR_Count","Counter_Name","Counter_Value"
4,4,1,1,36499,36499,1048576,"divide_kernel(float*, float const*, float const*, int, int)",64,0,0,12,16,"SQ_WAVES",16384
4,4,1,1,36499,36499,1048576,"divide_kernel(float*, float const*, float const*, int, int)",64,0,0,12,16,"SQ_INSTS_VALU_TRANS_F32",16384
8,8,1,2,36499,36499,1048576,"divide_kernel(float*, float const*, float const*, int, int)",64,0,0,12,16,"SQ_WAVES",16384
8,8,1,2,36499,36499,1048576,"divide_kernel(float*, float const*, float const*, int, int)",64,0,0,12,16,"SQ_INSTS_VALU_TRANS_F32",16384
"""
V3_COUNTERS_64 = """\
"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"
1,1,"Agent 1",1,15606,15606,1048576,17,"void addition_kernel<float>(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,3200098838431081,3200098838483232
1,1,"Agent 1",1,15606,15606,1048576,17,"void addition_kernel<float>(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_INSTS_VALU_ADD_F32",16384.000000,3200098838431081,3200098838483232
2,2,"Agent 1",1,15606,15606,1048576,20,"subtract_kernel(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,3200098838589014,3200098838638794
2,2,"Agent 1",1,15606,15606,1048576,20,"subtract_kernel(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_INSTS_VALU_ADD_F32",16384.000000,3200098838589014,3200098838638794
"""
V3_HIP_STATS = """\
"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"
"hipStreamCreateWithFlags",4,262497406,65624351.500000,85.15,3991286,249121840,122332531.343496
"hipGetDeviceCount",1,32505687,32505687.000000,10.54,32505687,32505687,0.00000000e+00
"hipHostMalloc",12,6096409,508034.083333,1.98,443793,548024,39236.753678
"""
V3_HIP_TRACE = """\
"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"
"HIP_RUNTIME_API","hipGetDevicePropertiesR0600",238,238,1,1191915574691984,1191915687784011
"HIP_RUNTIME_API","hipMalloc",238,238,2,1191915691312459,1191915691388696
"HIP_RUNTIME_API","hipMemcpy",238,238,4,1191915691439107,1191916547828448
"""
V3_COPIES_62 = """\
"Kind","Direction","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"
"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0,1,0,14955949675563,14955950239443
"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",1,0,0,14955952733485,14955953315285
"""
# rocprof-compute, MI300 (rocprofv2-based: Dispatch_ID,GPU_ID first, Kernel_Name later, Wave_Size_N
# / Correlation_ID_N / XCC_Index_N pass copies, TCC_EA0_* and TCC_BUBBLE)
PMC_PERF_MI300 = """\
Dispatch_ID,GPU_ID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,Correlation_ID,SQ_INSTS_VALU_FMA_F32,SQ_INSTS_VALU_MFMA_MOPS_BF16,Wave_Size_1,Correlation_ID_1,XCC_Index,TCC_EA0_RDREQ_sum,TCC_EA0_RDREQ_32B_sum,TCC_BUBBLE_sum,TCC_EA0_WRREQ_sum,TCC_EA0_WRREQ_64B_sum,Start_Timestamp,End_Timestamp
1,60633,1048576,256,0,0,4,4,16,64,"vecCopy(double*, double*, double*, int, int) (.kd)",0,0,0,64,0,0,65536,0,65536,131072,131072,716272603605252,716272603621412
2,60633,65536,256,65536,0,256,256,102,64,"Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1",0,1000,2000000,64,0,0,40000,16,39000,20000,20000,716272603642810,716272603656490
"""
PMC_KERNEL_TOP_US = """\
Kernel_Name,Count,Sum(us),Mean(us),Median(us),Pct
"vecCopy(double*, double*, double*, int, int) (.kd)",3,45.2,15.066666666666666,15.0,100.0
"""
SYSINFO_OLD = """\
workload_name,command,ip_blocks,timestamp,version,hostname,cpu_model,sbios,linux_distro,linux_kernel_version,amd_gpu_kernel_version,cpu_memory,gpu_memory,rocm_version,vbios,compute_partition,memory_partition,gpu_model,gpu_arch,gpu_l1,gpu_l2,cu_per_gpu,simd_per_cu,se_per_gpu,wave_size,workgroup_max_size,max_waves_per_cu,max_sclk,max_mclk,cur_sclk,cur_mclk,total_l2_chan,lds_banks_per_cu,sqc_per_gpu,pipes_per_gpu,hbm_bw,num_xcd
vcopy,./vcopy -n 1048576 -b 256 -i 3,SQ|LDS|SQC|TA|TD|TCP|TCC|SPI|CPC|CPF,Wed 29 May 2024 12:01:22 PM  (CDT),2,node-126,AMD Ryzen 9 7950X 16-Core Processor,"American Megatrends International, LLC.VS2683299N.FD",Ubuntu 22.04.4 LTS,5.18.2,,114656528,,6.2.0-13611,113-MI3SRIOV-001,SPX,NPS1,MI300X_A1,gfx942,32,4096,304,4,32,64,1024,32,2100,1300,2100,1300,128,32,160,4,5324.8,8
"""
ROCM_SMI = """\
device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),Average Graphics Package Power (W),GPU use (%),GPU Memory Allocated (VRAM%),GPU Memory Read/Write Activity (%),sclk clock speed:,mclk clock speed:,Card Series
card0,41.0,45.0,92.0,0,0,0,(800Mhz),(1600Mhz),AMD Instinct MI250X
card1,39.0,43.0,N/A (Secondary die),0,0,0,(800Mhz),(1600Mhz),AMD Instinct MI250X
device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),Average Graphics Package Power (W),GPU use (%),GPU Memory Allocated (VRAM%),GPU Memory Read/Write Activity (%),sclk clock speed:,mclk clock speed:,Card Series
card0,52.0,61.0,331.0,97,41,55,(1700Mhz),(1600Mhz),AMD Instinct MI250X
card1,39.0,43.0,N/A (Secondary die),0,0,0,(800Mhz),(1600Mhz),AMD Instinct MI250X
"""
AMD_SMI_MONITOR = """\
gpu,power_usage,hotspot_temperature,memory_temperature,gfx,gfx_clock,mem,mem_clock,encoder,decoder,vram_used,vram_total
0,742,71,59,98,2085,46,1300,N/A,0,152400,196592
1,139,40,38,0,132,0,900,N/A,0,283,196592
"""


def write(tmp_path: Path, name: str, text: str, crlf: bool = False) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode("utf-8"))
    return path


def parse(tmp_path: Path, name: str, text: str, crlf: bool = False):
    return parse_path(write(tmp_path, name, text, crlf), "rocm")


def rows(result) -> dict[str, int]:
    return result.rows()


def codes(result) -> list[str]:
    return [w.code for w in result.warnings]


# -- what a file is ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, variant", [
    ("results.csv", V1_RESULTS, "rocprof results csv (counters)"),
    ("results.csv", V1_OLD_TRACE, "rocprof results csv"),
    ("results.stats.csv", V1_STATS, "rocprof kernel_stats csv"),
    ("results.hip_stats.csv", V1_HIP_STATS, "rocprof hip_stats csv"),
    ("results_24813.csv", V2_RESULTS, "rocprofv2 results csv (counters)"),
    ("hip_api_trace_24813.csv", V2_HIP_API, "rocprofv2 hip_api_trace csv"),
    ("hcc_ops_trace_24813.csv", V2_HCC_OPS, "rocprofv2 hcc_ops_trace csv"),
    ("199_kernel_trace.csv", V3_TRACE_62, "rocprofv3 kernel_trace csv"),
    ("21228_kernel_trace.csv", V3_TRACE_63, "rocprofv3 kernel_trace csv"),
    ("218_counter_collection.csv", V3_COUNTERS_62, "rocprofv3 counter_collection csv (counters)"),
    ("15606_counter_collection.csv", V3_COUNTERS_64, "rocprofv3 counter_collection csv (counters)"),
    ("238_hip_api_stats.csv", V3_HIP_STATS, "rocprofv3 hip_api_stats csv"),
    ("238_hip_api_trace.csv", V3_HIP_TRACE, "rocprofv3 hip_api_trace csv"),
    ("197_memory_copy_trace.csv", V3_COPIES_62, "rocprofv3 memory_copy_trace csv"),
    ("pmc_perf.csv", PMC_PERF_MI300, "rocprof-compute pmc_perf csv (counters)"),
    ("pmc_kernel_top.csv", PMC_KERNEL_TOP_US, "rocprof-compute pmc_kernel_top csv"),
    ("sysinfo.csv", SYSINFO_OLD, "rocprof-compute sysinfo csv"),
    ("rocm-smi.csv", ROCM_SMI, "rocm-smi csv"),
    ("smi-monitor.csv", AMD_SMI_MONITOR, "amd-smi csv"),
])
def test_each_layout_is_recognised_by_its_columns(tmp_path, name, text, variant):
    head = read_head(write(tmp_path, name, text))
    assert rocm.sniff(head) == variant
    # the column names decide, the file name only names the report: another name, same family
    renamed = read_head(write(tmp_path, "renamed/data.csv", text))
    assert rocm.sniff(renamed) is not None


@pytest.mark.parametrize("text", [
    "a,b,c\n1,2,3\n",
    "Name,Calls\nfoo,3\n",                                          # a stats look-alike without times
    "timestamp, index, name, utilization.gpu [%]\n2024/01/01 00:00:00.000, 0, NVIDIA A100, 5 %\n",
    "GPUId,TimeStampUs,Field,Values\n0,1718783836956328,155,71.2\n",  # DCGM's field-value CSV
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Name\n",
])
def test_other_csvs_are_not_rocm(tmp_path, text):
    assert rocm.sniff(read_head(write(tmp_path, "x.csv", text))) is None


def test_the_sample_folder_is_every_kind_of_amd_file():
    variants = {rocm.sniff(read_head(p)) for p in AMD.rglob("*.csv")}
    assert None not in variants
    assert {v.split()[0] for v in variants} == {"rocprof", "rocprofv3", "rocprof-compute", "rocm-smi", "amd-smi"}


# -- rows, counted by hand -------------------------------------------------------------------------

def test_rocprof_results_give_a_kernel_per_dispatch_and_its_counters(tmp_path):
    result = parse(tmp_path, "results.csv", V1_RESULTS)
    assert result.error is None and not result.warnings
    kernels = result.tables["kernels"]
    assert kernels.height == 3
    assert kernels["duration_ns"].to_list() == [20160.0, 40000.0, 20500.0]      # DurationNs
    assert kernels["grid"].to_list() == ["(4096, 1, 1)", "(256, 1, 1)", "(4096, 1, 1)"]   # workgroups
    assert kernels["block"].to_list()[0] == "(256, 1, 1)"
    assert kernels["device"].to_list() == ["0", "0", "1"]
    assert kernels["name"][0] == "void stencil<double, 3>(double const*, double*, int) [clone .kd]"
    metrics = result.tables["metrics"]
    counters = metrics.filter(pl.col("section") == "counters")
    assert counters.height == 3 * 5
    fetch = counters.filter((pl.col("metric") == "FETCH_SIZE") & (pl.col("launch_id") == 2))
    assert fetch["value"][0] == 4096 * 1024 and fetch["unit"][0] == "byte" and fetch["value_text"][0] == "4096.000000"
    resources = metrics.filter(pl.col("section") == "dispatch")
    assert set(resources["metric"]) == {"lds", "scratch", "arch_vgpr", "accum_vgpr", "sgpr", "wave_size"}
    assert "activities" not in result.tables      # a counter collection is no timeline


def test_an_old_rocprof_trace_is_a_timeline(tmp_path):
    result = parse(tmp_path, "results.csv", V1_OLD_TRACE)
    assert rows(result) == {"kernels": 2, "activities": 2, "metrics": 10}   # lds, scr, vgpr, sgpr, fbar
    assert result.tables["kernels"]["duration_ns"].to_list() == [81440.0, 82440.0]   # EndNs - BeginNs
    assert result.tables["activities"]["start_ns"][0] == 7437612315658717.0
    assert set(result.tables["metrics"]["metric"]) == {"lds", "scratch", "arch_vgpr", "sgpr", "fbar"}


def test_stats_are_kernel_summaries_or_api_summaries(tmp_path):
    kernels = parse(tmp_path, "results.stats.csv", V1_STATS).tables["kernels"]
    assert kernels.select("kind", "count", "duration_ns").rows() == [("summary", 1, 40000.0), ("summary", 2, 40660.0)]
    api = parse(tmp_path, "results.hip_stats.csv", V1_HIP_STATS).tables["api_calls"]
    assert api.select("name", "calls", "total_ns", "avg_ns").rows()[0] == ("hipMemcpy", 2, 1830000.0, 915000.0)
    v3 = parse(tmp_path, "238_hip_api_stats.csv", V3_HIP_STATS).tables["api_calls"]
    assert v3.height == 3 and v3["min_ns"][0] == 3991286.0 and v3["max_ns"][0] == 249121840.0
    # a stats file named otherwise is told by its names (HIP functions: API calls)
    assert "api_calls" in parse(tmp_path, "stats.csv", V1_HIP_STATS).tables


def test_kernel_stats_keep_the_printed_min_and_max_and_no_median():
    """rocprofv3's kernel_stats.csv prints MinNs and MaxNs per kernel (first row: 60 calls,
    1306575 and 1341776 ns), no median; rocprof v1's prints neither."""
    kernels = parse_path(corpus_path("rocm", "rocprofv3",
                                     "huizhg__gpu-perf-mi250x__results_prof_rocblas_4096_kernel_stats.csv")).tables["kernels"]
    assert kernels.select("count", "min_ns", "median_ns", "max_ns").row(0) == (60, 1306575.0, None, 1341776.0)
    assert kernels["min_ns"].null_count() == 0 and kernels["median_ns"].null_count() == kernels.height


def test_rocprofv2_results_with_the_blank_line_under_the_header(tmp_path):
    result = parse(tmp_path, "results_24813.csv", V2_RESULTS)
    assert result.error is None and not result.warnings
    kernels = result.tables["kernels"]
    assert kernels["source_line"].to_list() == [3, 4]
    assert kernels["duration_ns"].to_list() == [81440.0, 100000.0]
    assert set(result.tables["metrics"].filter(pl.col("section") == "counters")["metric"]) == {
        "SQ_WAVES", "SQ_INSTS_VALU_MFMA_F16", "SQ_INSTS_MFMA"}


def test_rocprofv2_traces_split_calls_from_operations(tmp_path):
    api = parse(tmp_path, "hip_api_trace_24813.csv", V2_HIP_API)
    assert rows(api) == {"api_calls": 2}
    assert api.tables["api_calls"].select("name", "total_ns").rows() == [("hipMalloc", 10000.0), ("hipLaunchKernel", 5000.0)]
    ops = parse(tmp_path, "hcc_ops_trace_24813.csv", V2_HCC_OPS)
    assert ops.tables["activities"]["kind"].to_list() == ["memcpy", "kernel", "memcpy"]
    assert ops.tables["kernels"].select("name", "duration_ns").rows() == [("vecAdd(float*, float*, float*, int)", 81440.0)]


@pytest.mark.parametrize("text, streams", [(V3_TRACE_62, [None, None, None]), (V3_TRACE_63, [1, 2])])
def test_rocprofv3_kernel_traces_of_two_releases(tmp_path, text, streams):
    result = parse(tmp_path, "1_kernel_trace.csv", text)
    kernels = result.tables["kernels"]
    assert kernels["stream"].to_list() == streams
    assert kernels["grid"][0] == "(16, 1024, 1)" and kernels["block"][0] == "(64, 1, 1)"   # 1024 x 1024 items / 64
    assert (kernels["duration_ns"] > 0).all()
    assert result.tables["activities"].height == kernels.height


@pytest.mark.parametrize("text, agent, timed", [(V3_COUNTERS_62, "1", False), (V3_COUNTERS_64, "1", True)])
def test_rocprofv3_counter_collections_give_one_kernel_per_dispatch(tmp_path, text, agent, timed):
    result = parse(tmp_path, "1_counter_collection.csv", text)
    kernels = result.tables["kernels"]
    assert kernels.height == 2 and kernels["launch_id"].to_list() == [1, 2]
    assert kernels["device"].to_list() == [agent, agent]          # `Agent 1` is agent 1
    assert kernels["duration_ns"].is_not_null().all() == timed
    metrics = result.tables["metrics"]
    assert metrics.height == 4 and set(metrics["launch_id"]) == {1, 2}
    assert metrics["value"].to_list() == [16384.0] * 4


def test_rocprofv3_copies_api_calls_and_agents(tmp_path):
    copies = parse(tmp_path, "197_memory_copy_trace.csv", V3_COPIES_62).tables["activities"]
    assert copies.select("kind", "name", "device").rows() == [
        ("memcpy", "MEMORY_COPY_HOST_TO_DEVICE", "1"), ("memcpy", "MEMORY_COPY_DEVICE_TO_HOST", "0")]
    assert copies["duration_ns"][0] == 14955950239443 - 14955949675563
    calls = parse(tmp_path, "238_hip_api_trace.csv", V3_HIP_TRACE).tables["api_calls"]
    assert calls["name"].to_list() == ["hipGetDevicePropertiesR0600", "hipMalloc", "hipMemcpy"]
    assert calls["kind"].unique().to_list() == ["trace"]
    agents = parse_path(AMD / "mi300x" / "llama3-8b" / "48211_agent_info.csv", "rocm")
    assert agents.hints.device_name == "AMD Instinct MI300X"
    gfx = agents.tables["metrics"].filter((pl.col("metric") == "Name") & (pl.col("device") == "2"))
    assert gfx["value_text"].to_list() == ["gfx942"]     # the LLVM target, for GPU identity


def test_rocprof_compute_mi300_counters_and_kernel_top(tmp_path):
    result = parse(tmp_path, "pmc_perf.csv", PMC_PERF_MI300)
    counters = result.tables["metrics"].filter(pl.col("section") == "counters")
    # pass copies (Wave_Size_1, Correlation_ID_1) are no counters; XCC_Index is a field
    assert set(counters["metric"]) == {"SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_MFMA_MOPS_BF16", "TCC_EA0_RDREQ_sum",
                                       "TCC_EA0_RDREQ_32B_sum", "TCC_BUBBLE_sum", "TCC_EA0_WRREQ_sum",
                                       "TCC_EA0_WRREQ_64B_sum"}
    assert result.tables["kernels"]["duration_ns"].to_list() == [16160.0, 13680.0]
    top = parse(tmp_path, "pmc_kernel_top.csv", PMC_KERNEL_TOP_US).tables["kernels"]
    assert top.select("count", "duration_ns").rows() == [(3, pytest.approx(45200.0))]   # Sum(us) in ns


def test_sysinfo_names_the_gpu_command_and_host(tmp_path):
    result = parse(tmp_path, "sysinfo.csv", SYSINFO_OLD)
    assert result.hints.device_name == "MI300X_A1"
    assert result.hints.command == "./vcopy -n 1048576 -b 256 -i 3"
    assert result.hints.host == "node-126"
    arch = result.tables["metrics"].filter(pl.col("metric") == "gpu_arch")
    assert arch["value_text"].to_list() == ["gfx942"]
    new = parse_path(AMD / "mi210" / "workloads" / "dgemm" / "MI210" / "sysinfo.csv", "rocm")
    assert new.hints.device_name == "MI210" and new.tool_version == "3.0.0"


def test_rocprof_compute_roofline_ceilings_in_base_units():
    metrics = parse_path(AMD / "mi210" / "workloads" / "dgemm" / "MI210" / "roofline.csv", "rocm").tables["metrics"]
    hbm = metrics.filter(pl.col("metric") == "HBMBw")
    assert hbm["value"][0] == pytest.approx(1352.6e9) and hbm["unit"][0] == "byte/second"
    assert metrics.filter(pl.col("metric") == "MFMAF64Flops")["unit"][0] == "FLOP/second"


def test_rocm_smi_loop_with_repeated_headers_and_a_secondary_die(tmp_path):
    samples, result = _samples(tmp_path, "rocm-smi.csv", ROCM_SMI)
    assert samples.height == 4 and not result.warnings
    assert samples["gpu_index"].to_list() == [0, 1, 0, 1]
    busy = samples.row(2, named=True)
    assert (busy["util_gpu_pct"], busy["util_mem_pct"], busy["power_w"], busy["temperature_c"]) == (97, 55, 331, 52)
    assert (busy["sm_clock_mhz"], busy["mem_clock_mhz"]) == (1700, 1600)
    assert samples["power_w"][1] is None                      # `N/A (Secondary die)`
    assert samples["gpu_name"].unique().to_list() == ["AMD Instinct MI250X"]
    assert result.hints.device_name == "AMD Instinct MI250X"


def test_amd_smi_metric_and_monitor(tmp_path):
    metric, _ = _samples(tmp_path, "amd-smi.csv", (AMD / "mi300x" / "llama3-8b" / "amd-smi-metric.csv").read_text())
    assert metric.height == 41 and metric["timestamp"].is_not_null().all()
    assert metric["elapsed_s"].max() == 40.0
    assert metric["mem_total_mib"].unique().to_list() == [196592.0]
    monitor, _ = _samples(tmp_path, "monitor.csv", AMD_SMI_MONITOR)
    assert monitor.select("gpu_index", "power_w", "util_gpu_pct", "util_mem_pct", "sm_clock_mhz",
                          "temperature_c", "mem_used_mib").rows()[0] == (0, 742, 98, 46, 2085, 71, 152400)


def _samples(tmp_path, name, text):
    result = parse(tmp_path, name, text)
    return result.tables["samples"], result


# -- as found in the wild: CRLF, cut short, broken rows ---------------------------------------------

@pytest.mark.parametrize("name, text", [
    ("results.csv", V1_RESULTS), ("results_24813.csv", V2_RESULTS), ("1_kernel_trace.csv", V3_TRACE_63),
    ("1_counter_collection.csv", V3_COUNTERS_64), ("rocm-smi.csv", ROCM_SMI), ("pmc_perf.csv", PMC_PERF_MI300),
])
def test_crlf_line_ends_read_the_same(tmp_path, name, text):
    unix, windows = parse(tmp_path, name, text), parse(tmp_path / "crlf", name, text, crlf=True)
    assert windows.error is None and not windows.warnings
    for table, frame in unix.tables.items():
        assert windows.tables[table].drop("source_file", strict=False).equals(frame.drop("source_file", strict=False))


@pytest.mark.parametrize("name, text, table", [
    ("results.csv", V1_RESULTS, "kernels"), ("1_kernel_trace.csv", V3_TRACE_62, "kernels"),
    ("238_hip_api_trace.csv", V3_HIP_TRACE, "api_calls"), ("rocm-smi.csv", ROCM_SMI, "samples"),
])
def test_a_file_cut_inside_its_last_row_loses_that_row_only(tmp_path, name, text, table):
    whole = parse(tmp_path, name, text).tables[table].height
    cut = text.rstrip("\n")
    cut = cut[: cut.rindex(",") - 3]          # inside the last row
    result = parse(tmp_path / "cut", name, cut)
    assert result.tables[table].height == whole - 1
    warning = next(w for w in result.warnings if w.code == "rocm.truncated")
    assert f":{len(cut.splitlines())}:" in warning.message and "ends inside this row" in warning.message


def test_a_broken_row_is_located_and_the_rest_is_read(tmp_path):
    lines = V3_TRACE_63.splitlines()
    broken = "\n".join([lines[0], lines[1][:60] + ',"stray"quote' + lines[1][60:], lines[2], "oops,1,2"]) + "\n"
    result = parse(tmp_path, "1_kernel_trace.csv", broken)
    assert result.tables["kernels"].height == 1 and result.tables["kernels"]["source_line"][0] == 3
    bad = [w for w in result.warnings if w.code == "rocm.bad-row"]
    assert [w.line for w in bad] == [2, 4]
    assert "1_kernel_trace.csv:2:" in bad[0].message and "^" in bad[0].message
    assert "1_kernel_trace.csv:4:" in bad[1].message and "stops after 3 of the header's 19 fields" in bad[1].message


def test_a_header_without_rows_is_an_error(tmp_path):
    result = parse(tmp_path, "1_kernel_trace.csv", V3_TRACE_63.splitlines()[0] + "\n")
    assert result.error is not None and "holds no rows" in result.error.describe()


def test_a_counter_two_passes_collected_is_read_once(tmp_path):
    text = PMC_PERF_MI300.replace("XCC_Index,TCC_EA0_RDREQ_sum", "XCC_Index,SQ_INSTS_VALU_FMA_F32")
    result = parse(tmp_path, "pmc_perf.csv", text)
    fma = result.tables["metrics"].filter(pl.col("metric") == "SQ_INSTS_VALU_FMA_F32")
    assert fma["value"].to_list() == [0.0, 1000.0]          # the first column of that name


def test_concatenated_files_repeat_their_header(tmp_path):
    result = parse(tmp_path, "results.csv", V1_RESULTS + V1_RESULTS)
    assert result.tables["kernels"].height == 6 and not result.warnings


# -- the vocabulary ----------------------------------------------------------------------------------

def test_every_spelling_of_a_field_across_releases():
    spelled = {field: {c.header for c in columns.COLUMNS if c.field == field} for field in ("agent", "start", "end")}
    assert spelled["agent"] == {"gpu-id", "GPU_ID", "Agent_Id", "Agent_ID"}
    assert spelled["start"] == {"BeginNs", "Start_Timestamp", "Begin_Timestamp"}   # rocprofv2 stdout records: Begin_
    assert spelled["end"] == {"EndNs", "End_Timestamp", "Stop_Timestamp"}


def test_pass_copies_are_neither_fields_nor_counters():
    names = ["Dispatch_ID", "wave_size", "wave_size_1", "obj_2", "Wave_Size_3", "Correlation_ID_4", "XCC_Index_5",
             "SQ_WAVES", "TCC_HIT[0]", "TCC_EA_RDREQ_sum", "FetchSize"]
    assert columns.counter_columns(names) == ["SQ_WAVES", "TCC_HIT[0]", "TCC_EA_RDREQ_sum", "FetchSize"]


@pytest.mark.parametrize("name, report", [
    ("48211_kernel_trace.csv", "kernel_trace"), ("run1_hip_api_stats.csv", "hip_api_stats"),
    ("results_4567.csv", "results"), ("hcc_ops_trace_4567.csv", "hcc_ops_trace"),
    ("results.stats.csv", "kernel_stats"), ("out.copy_stats.csv", "copy_stats"), ("pmc_perf.csv", "pmc_perf"),
    ("SQ_INST_LEVEL_LDS.csv", "SQ_INST_LEVEL_LDS"), ("data.csv", None),
])
def test_what_a_file_name_says(name, report):
    assert columns.report_name(Path(name)) == report


LAYOUTS = [V1_RESULTS, V1_OLD_TRACE, V1_STATS, V1_HIP_STATS, V2_RESULTS, V2_HIP_API, V2_HCC_OPS, V3_TRACE_62,
           V3_TRACE_63, V3_COUNTERS_62, V3_COUNTERS_64, V3_HIP_STATS, V3_HIP_TRACE, V3_COPIES_62, PMC_PERF_MI300,
           PMC_KERNEL_TOP_US, SYSINFO_OLD, ROCM_SMI, AMD_SMI_MONITOR]


def test_every_kind_of_header_holds_a_mark():
    """The marks that find a ROCm CSV after a job's output: every kind of table names a field
    whose every spelling is a mark, every info file a name that is one, every SMI tool its
    device column; and each layout's header line holds one."""
    from roofreport.families.rocm import smi

    marks = set(rocm.MARKS)
    spellings = {field: {c.header for c in columns.COLUMNS if c.field == field}
                 for field in {c.field for c in columns.COLUMNS}}
    for report in columns.REPORTS:
        assert any(spellings[field] <= marks for field in report.requires), report.id
    for kind, (needs, _) in columns.INFO_REPORTS.items():
        assert needs & marks, kind
    assert {f"{device}," for device, _ in smi.VOCABULARIES.values()} <= marks
    for text in LAYOUTS + [(AMD / path).read_text() for path in sorted(AMD.rglob("*.csv"))]:
        assert any(mark in text.splitlines()[0] for mark in marks), text[:80]


JOB_OUTPUT = "".join(
    [f"Lmod: loading rocm/6.2.{n} craype-accel-amd-gfx90a\n" for n in range(40)]
    + [f"step {n}: loss {1 / (n + 1):.4f}, 1834 img/s on device 0\n" for n in range(3000)])


@pytest.mark.parametrize("name, text", [("slurm-4412.out", ROCM_SMI), ("job.out", V1_STATS),
                                        ("job_smi.out", AMD_SMI_MONITOR)])
def test_a_rocm_csv_after_a_jobs_output_is_found_and_read_from_its_header(tmp_path, name, text):
    from roofreport.pipeline.ingest import Skipped, parse_file
    from roofreport.pipeline.sniff import sniff

    path = write(tmp_path, name, JOB_OUTPUT + text)
    sniffed = sniff(path)
    assert sniffed.family == "rocm" and sniffed.start == len(JOB_OUTPUT.encode())
    assert sniffed.skipped_lines == JOB_OUTPUT.count("\n")
    result = parse_file(path, sniffed.spec.name, sniffed.variant, name, Skipped(sniffed.start, sniffed.skipped_lines))
    alone = parse(tmp_path, "alone/" + name.replace(".out", ".csv"), text)
    assert result.error is None and result.rows() == alone.rows() and result.rows()
    first = next(iter(result.tables.values()))
    assert first["source_line"].min() == next(iter(alone.tables.values()))["source_line"].min() + sniffed.skipped_lines


def test_the_header_is_found_below_noise_lines(tmp_path):
    text = "RPL: on '240505_115025' from '/opt/rocm-6.2.0' in '/home/rocm'\n" + V1_STATS
    found = header.find(text.splitlines(), Path("results.stats.csv"))
    assert found is not None and found.line_no == 2
