"""Why a log holds no kernels, from the log (issue 31, item 9): each reason on a real log where the
corpus has one, ncu's refusals on fixtures true to its output, and the runs' text that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

import roofreport
from roofreport.analysis import speedup
from roofreport.pipeline import failures
from tests.conftest import corpus_path

COURSE = ("course",)


@pytest.mark.parametrize(("parts", "code", "line", "said"), [
    # nvprof's --timeout stopped the program before its first kernel; the data loader's traceback
    # (ConnectionResetError) that follows is its consequence, not the cause
    (("srinidhigoud-examples", "imagenet", "results", "full_mem", "p40", "out.alexnet_600_16_0.01_p40_full_mem.787365"),
     failures.TIME_LIMIT, 4, "==174504== Execution timeout, stopping the application..."),
    # Slurm killed the job at its time limit, its message glued to a progress line
    (("pramitmallick-examples", "imagenet", "outputs", "out.expCloudML.702932"), failures.TIME_LIMIT, 479,
     "slurmstepd: error: *** JOB 702932 ON gpu-07 CANCELLED AT 2019-04-11T03:52:16 DUE TO TIME LIMIT ***"),
    # argparse refused the command line: the job ended before anything ran
    (("pramitmallick-examples", "_deleted_in_history", "imagenet", "out.expCloudML.543483"), failures.ARGUMENTS, 1,
     "main.py: error: unrecognized arguments: GA-3033-025/imagenet_pytorch_small"),
    # a traceback whose exception is CUDA's out of memory
    (("adityamwagh-hpml-hw", "hw4", "hw4_v100_computations.out"), failures.OUT_OF_MEMORY, 56,
     "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 MiB"),
    # any other traceback: a crash, said with its exception
    (("adityamwagh-hpml-hw", "hw5", "part_a", "computations_v100.txt"), failures.CRASH, 68,
     "ModuleNotFoundError: No module named 'torch'"),
])
def test_each_reason_on_a_real_log(parts, code, line, said):
    found = failures.read_failure(corpus_path(*COURSE, *parts))
    assert (found.code, found.line) == (code, line)
    assert said in found.reason


NCU_HEAD = "$ ncu --set full ./vectorAdd\n==PROF== Connected to process 41231 (/home/student/cuda-samples/bin/vectorAdd)\n"
NCU_TAIL = ("[Vector addition of 50000 elements]\nCopy input data from the host memory to the CUDA device\n"
            "CUDA kernel launch with 196 blocks of 256 threads\nTest PASSED\nDone\n"
            "==PROF== Disconnected from process 41231\n==WARNING== No kernels were profiled.\n")
UNSUPPORTED = "==ERROR== Profiling is not supported on device 0. To find out supported GPUs refer --list-chips option.\n"
PERMISSION = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
              "on the target device 0. For instructions on enabling permissions and to get more information see "
              "https://developer.nvidia.com/ERR_NVGPUCTRPERM\n")


@pytest.mark.parametrize(("error", "code", "meaning"), [
    (UNSUPPORTED, failures.UNSUPPORTED_GPU, "Pascal and older need nvprof"),
    (PERMISSION, failures.COUNTER_PERMISSION, "no permission to read the GPU's performance counters"),
])
def test_ncus_refusals_are_the_files_and_the_runs_failure(tmp_path: Path, error, code, meaning):
    log = tmp_path / "p100" / "ncu_vectoradd.txt"
    log.parent.mkdir()
    log.write_text(NCU_HEAD + error + NCU_TAIL, encoding="utf-8")
    data = roofreport.read(log)
    files = data.tables["files"].row(0, named=True)
    assert files["failure"] == code and meaning in files["failure_reason"]
    assert files["failure_reason"].endswith("[ncu_vectoradd.txt line 3]")
    runs = data.runs.select("failure", "failure_reason").rows()
    assert runs == [(code, files["failure_reason"])]
    # The runs' text says it where it said "its logs hold no kernel summary or trace", and the
    # appendix's runs without kernels give it as their reason.
    analysis = roofreport.analyze(data)
    row = analysis.runs.row(0, named=True)
    assert speedup.no_kernels_reason(row) == files["failure_reason"]
    from roofreport.report.naming import RunNames
    from roofreport.report.sections.left_out import run_gaps
    [(_, missing, why)] = run_gaps(analysis, RunNames(data.runs))
    assert missing.startswith("kernels") and why.startswith(failures.SUMMARY[code])


def test_a_log_with_kernels_has_no_failure_and_a_run_without_one_keeps_the_old_words():
    data = roofreport.read(corpus_path("ncu", "text", "colab_t4_raytracer_warning_interleaved.txt"))
    assert data.tables["files"]["failure"].to_list() == [None]
    assert data.runs["failure"].to_list() == [None]
    assert speedup.no_kernels_reason({"failure_reason": None}) == "its logs hold no kernel summary or trace"


def test_a_run_of_copies_alone_says_why_it_measured_no_kernel():
    # nvprof's summary holds only [CUDA memcpy HtoD]: the --timeout stopped the program first.
    path = corpus_path(*COURSE, "srinidhigoud-examples", "imagenet", "results", "full_mem", "p40",
                       "out.alexnet_600_16_0.01_p40_full_mem.787365")
    data = roofreport.read(path)
    assert data.tables["kernels"]["category"].unique().to_list() == ["memcpy"]
    assert data.runs["failure"].to_list() == [failures.TIME_LIMIT]


def test_first_cause_wins_and_quiet_logs_say_nothing():
    lines = ["Epoch: [0][10/100]", "Traceback (most recent call last):", '  File "main.py", line 3, in <module>',
             "    main()", "RuntimeError: CUDA error: out of memory", "slurmstepd: error: *** JOB 7 ON g1 CANCELLED AT 2020"]
    found = failures.failure_of(lines)
    assert (found.code, found.line) == (failures.OUT_OF_MEMORY, 2)
    assert failures.failure_of(lines[5:]).code == failures.CANCELLED
    # nvprof's warning that invalid records *can* come from running out of memory is no failure
    assert failures.failure_of(["==1== Warning: This can happen if device ran out of memory or if a device "
                                "kernel was stopped due to an assertion."]) is None
    assert failures.failure_of(["usage: main.py [-h]", "but nothing refused"]) is None
