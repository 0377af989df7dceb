"""The clock a run's kernels ran at when the log records no frequency (issue 31, item 1):
ncu's locked clock by version and command line, and the SM clock nvidia-smi sampled for a trace."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from roofreport.gpu import clocks
from tests.conftest import corpus_path


@pytest.mark.parametrize(("version", "command", "domain", "said"), [
    # every ncu of the corpus (2019-2025) locks to base unless told otherwise
    ("2023.2.0.0 (build 32895467)", None, clocks.BASE, "ncu 2023.2 locks clocks to base by default"),
    ("2019.5", "ncu --set full ./app", clocks.BASE, "ncu 2019.5"),
    (None, None, clocks.BASE, "version not logged"),
    # --clock-control none (both spellings) runs at the governor's clock, as a trace does
    ("2023.2.0.0", "ncu -f --replay-mode=application --clock-control=none --set roofline ./a", clocks.UNLOCKED,
     "--clock-control none"),
    ("2022.1.1", "/usr/local/cuda/bin/ncu --clock-control none -o out python train.py", clocks.UNLOCKED, "none"),
    # the 2026.1 CLI reference lists boost as the default, with force-boost and reset added
    ("2026.1.0.0", None, clocks.BOOST, "ncu 2026.1 locks clocks to boost by default"),
    ("2026.1", "ncu --clock-control base ./app", clocks.BASE, "--clock-control base"),
    ("2026.1", "ncu --clock-control force-boost ./app", clocks.BOOST, "force-boost"),
    ("2024.3.2", "ncu --clock-control reset", clocks.BASE, "ncu 2024.3"),
])
def test_ncu_clock_domain_from_version_and_command_line(version, command, domain, said):
    found = clocks.ncu_clock_domain(version, command)
    assert found.domain == domain and said in found.source


@pytest.mark.parametrize(("line", "command"), [
    ("$ ncu --clock-control none --section SpeedOfLight ./vectorAdd",
     "ncu --clock-control none --section SpeedOfLight ./vectorAdd"),
    ("+ /opt/nvidia/nsight-compute/2022.1.1/ncu --metrics gpu__time_duration.sum python main.py",
     "/opt/nvidia/nsight-compute/2022.1.1/ncu --metrics gpu__time_duration.sum python main.py"),
    ("nv-nsight-cu-cli --clock-control none ./a.out", "nv-nsight-cu-cli --clock-control none ./a.out"),
    ("==PROF== Connected to process 58445 (/usr/libexec/platform-python3.6)", None),
    ("module load ncu", None),
    ("ncu.txt written", None),
])
def test_an_ncu_invocation_is_found_in_a_line(line, command):
    assert clocks.ncu_command(line) == command


def test_sampled_sm_clock_of_a_busy_v100_from_nvidia_smi_dmon():
    from roofreport.pipeline.ingest import ingest
    path = corpus_path("smi", "dmon", "adityamwagh__hpml-hw__hw5__part_a__gpu_utilization_v100.txt")
    samples = ingest([path]).tables["samples"]
    found = clocks.sampled_sm_clock(samples)
    # 179 samples, two idle (0-2 % busy) at 1515 MHz: the busy ones ran at 1530 MHz, 877 MHz memory.
    assert found == clocks.SampledClock(sm_clock_mhz=1530.0, mem_clock_mhz=877.0, samples=177)


def test_sampled_sm_clock_leaves_idle_samples_out_and_needs_a_clock():
    samples = pl.DataFrame({"util_gpu_pct": [0.0, 95.0, 99.0, 97.0], "sm_clock_mhz": [300.0, 1230.0, 1245.0, 1260.0],
                            "mem_clock_mhz": [405.0, 5000.0, 5000.0, 5000.0]})
    assert clocks.sampled_sm_clock(samples) == clocks.SampledClock(1245.0, 5000.0, 3)
    no_util = samples.with_columns(pl.lit(None, pl.Float64).alias("util_gpu_pct"))
    assert clocks.sampled_sm_clock(no_util).samples == 4
    assert clocks.sampled_sm_clock(samples.with_columns(pl.lit(None, pl.Float64).alias("sm_clock_mhz"))) is None
    assert clocks.sampled_sm_clock(pl.DataFrame()) is None


NCU_LOG = """{command}
[Vector addition of 50000 elements]
==PROF== Connected to process 9120 (/home/student/cuda-samples/bin/vectorAdd)
==PROF== Profiling "vectorAdd" - 0: 0%....50%....100% - 1 pass
Copy output data from the CUDA device to the host memory
Test PASSED
Done
==PROF== Disconnected from process 9120
[9120] vectorAdd@127.0.0.1
  vectorAdd(const float *, const float *, float *, int) (196, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 7.5
    Section: Command line profiler metrics
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    dram__bytes.sum               Kbyte       602.75
    gpu__time_duration.sum      usecond         4.13
    ----------------------- ----------- ------------

"""


@pytest.mark.parametrize(("command", "domain", "said"), [
    ("$ ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes.sum ./vectorAdd", clocks.UNLOCKED,
     "--clock-control none on ncu's command line"),
    ("$ ncu --metrics gpu__time_duration.sum,dram__bytes.sum ./vectorAdd", clocks.BASE,
     "locks clocks to base by default"),
])
def test_a_runs_clock_domain_reads_the_command_line_its_ncu_log_echoed(tmp_path, command, domain, said):
    import roofreport
    log = tmp_path / "t4" / "ncu_vectoradd.txt"
    log.parent.mkdir()
    log.write_text(NCU_LOG.format(command=command), encoding="utf-8")
    data = roofreport.read(log)
    assert data.kernels.height == 1 and data.kernels["sm_clock_hz"].to_list() == [None]   # no frequency logged
    row = data.runs.row(0, named=True)
    assert row["clock_domain"] == domain and said in row["clock_source"]
    assert data.tables["files"]["failure"].to_list() == [None]


def test_runs_without_an_ncu_log_have_no_ncu_clock():
    import roofreport
    data = roofreport.read(corpus_path("smi", "dmon", "adityamwagh__hpml-hw__hw5__part_a__gpu_utilization_v100.txt"))
    assert data.runs["clock_domain"].to_list() == [None] * data.runs.height


# -- the model: roofs at the clock the time was measured at (issue 31, item 1) -------------------

_COUNTERS = """    smsp__sass_thread_inst_executed_op_fadd_pred_on.sum        inst       50,000
    smsp__sass_thread_inst_executed_op_ffma_pred_on.sum        inst      100,000
    smsp__sass_thread_inst_executed_op_fmul_pred_on.sum        inst       50,000
"""
SMI_CSV = """timestamp, utilization.gpu [%], utilization.memory [%], power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz]
2025/03/20 03:15:05.538, 0 %, 0 %, 15.60 W, 47, 300 MHz, 405 MHz
2025/03/20 03:15:10.553, 97 %, 40 %, 69.10 W, 66, 1200 MHz, 5000 MHz
2025/03/20 03:15:15.562, 98 %, 41 %, 69.80 W, 68, 1185 MHz, 5000 MHz
2025/03/20 03:15:20.571, 96 %, 40 %, 69.95 W, 69, 1215 MHz, 5000 MHz
"""
T4_FP32, T4_BOOST, T4_BASE = 8.1e12, 1590, 585


def _t4_run(tmp_path, command: str, smi: bool = False) -> dict:
    import roofreport
    folder = tmp_path / "t4"
    folder.mkdir()
    text = NCU_LOG.format(command=command).replace("    gpu__time_duration.sum      usecond         4.13\n",
                                                   "    gpu__time_duration.sum      usecond         4.13\n" + _COUNTERS)
    (folder / "ncu_vectoradd.txt").write_text(text, encoding="utf-8")
    if smi:
        (folder / "gpu_log.csv").write_text(SMI_CSV, encoding="utf-8")
    runs = roofreport.read(folder).runs.filter(pl.col("flops").is_not_null())
    assert runs.height == 1
    return runs.row(0, named=True)


def test_an_ncu_run_without_a_logged_frequency_is_judged_at_the_base_clock_ncu_locked(tmp_path):
    """A T4 replayed at its 585 MHz base clock is judged against 585/1590 of its boost peak."""
    row = _t4_run(tmp_path, "$ ncu --metrics gpu__time_duration.sum,dram__bytes.sum ./vectorAdd")
    assert row["gpu_model"] == "Tesla T4" and row["flops"] == 300_000
    assert row["fma_share"] == 0.5 and row["ceiling"] == "FP32 at 50% FMA"     # ncu's per-op counters
    assert row["peak_flops_per_s"] == pytest.approx(T4_FP32 * T4_BASE / T4_BOOST)
    assert row["roof_clock"].startswith("base clock 585 MHz (ncu") and "locks clocks to base" in row["roof_clock"]


def test_an_unlocked_ncu_run_takes_the_clock_nvidia_smi_sampled_beside_it(tmp_path):
    row = _t4_run(tmp_path, "$ ncu --clock-control none --metrics gpu__time_duration.sum ./vectorAdd", smi=True)
    assert row["peak_flops_per_s"] == pytest.approx(T4_FP32 * 1200 / T4_BOOST)    # the busy samples' median
    assert row["roof_clock"].startswith("SM clock 1200 MHz, as the GPU's monitoring log") and "3 samples" in row["roof_clock"]


def test_an_unlocked_ncu_run_without_samples_is_at_boost_and_says_so(tmp_path):
    row = _t4_run(tmp_path, "$ ncu --clock-control none --metrics gpu__time_duration.sum ./vectorAdd")
    assert row["peak_flops_per_s"] == pytest.approx(T4_FP32)
    assert row["roof_clock"] == "boost clock 1590 MHz (ncu ran with --clock-control none; no clock sampled beside the run)"


def test_a_traced_run_takes_the_sm_clock_nvidia_smi_sampled_in_its_folder(tmp_path):
    """An nvprof trace (kernels unlocked) with nvidia-smi's query CSV beside it: the roofs are at the
    busy samples' median clock (1200 MHz), not the GTX 1080's 1733 MHz boost; without the CSV, boost."""
    import importlib.util

    import roofreport
    here = Path(__file__).resolve().parent / "data" / "make_gtx1080_micro.py"
    spec = importlib.util.spec_from_file_location("make_gtx1080_micro", here)
    layout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout)
    kernel = "gpp_kernel(float2 const *, float2 const *, float*, int)"
    for name, smi in (("sampled", True), ("boost", False)):
        run = tmp_path / name / "gtx1080" / "gpp"
        run.mkdir(parents=True)
        (run / "nvprof_metrics.log").write_text(layout._metrics_log(100, "./gpp.x 4096", kernel, 1e10, 2e9, 10))
        (run / "nvprof_gpu_trace.log").write_text(layout._trace_log(101, "./gpp.x 4096", kernel, 5000.0, 10, 1.0))
        if smi:
            (run / "gpu_log.csv").write_text(SMI_CSV, encoding="utf-8")
        rows = roofreport.read(tmp_path / name).runs.filter(pl.col("flops").is_not_null())
        row = rows.row(0, named=True)
        assert row["gpu_model"] == "GeForce GTX 1080" and row["counted_time_source"].startswith("nvprof trace")
        if smi:
            assert row["peak_flops_per_s"] == pytest.approx(8.87e12 * 1200 / 1733, rel=0.01)
            assert row["roof_clock"].startswith("SM clock 1200 MHz, as the GPU's monitoring log")
        else:
            assert row["peak_flops_per_s"] == pytest.approx(8.87e12, rel=0.01)
            assert row["roof_clock"] == ("boost clock 1733 MHz (traced kernels run unlocked; no clock sampled "
                                         "beside the run)")
