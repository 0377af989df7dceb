"""Training iterations (issue 31, item 6): loss backward passes, optimizer steps, the epoch size
the program prints, never the forward loss launches of validation batches; each count says how
it was counted.

pramitmallick's expCloudML jobs print "Epoch: [0][0/4184]" (4,184 training batches an epoch)
and "Test: [0/163]" (163 validation batches): the forward loss kernel ran 4,347 times, the
backward one 4,184.
"""

from __future__ import annotations

import re

import polars as pl
import pytest

import roofreport
from roofreport.model import derive
from roofreport.model.iterations import run_iterations
from roofreport.pipeline.progress import progress_of
from roofreport.tables import schema
from tests.conftest import corpus_path

OUTPUTS = ("course", "pramitmallick-examples", "imagenet", "outputs")


@pytest.fixture(scope="module")
def outputs():
    return roofreport.read(corpus_path(*OUTPUTS))


def _printed(path) -> tuple[int, int, int]:
    """The log's own epoch size, validation batches and printed epochs, read here with a regex
    of the test's own (not the reader's)."""
    text = path.read_text(errors="replace")
    sizes = set(re.findall(r"^Epoch: \[\d+\]\[\d+/(\d+)\]", text, re.M))
    tests = set(re.findall(r"^Test: \[\d+/(\d+)\]", text, re.M))
    epochs = set(re.findall(r"^Epoch: \[(\d+)\]", text, re.M))
    assert len(sizes) == 1 and len(tests) <= 1
    return int(sizes.pop()), int(tests.pop()) if tests else 0, len(epochs)


@pytest.mark.corpus
def test_expcloudml_runs_count_training_steps_not_validation_batches(outputs):
    runs = outputs.runs.filter(pl.col("run").str.contains("expCloudML") & pl.col("kernel_time_ns").is_not_null())
    root = corpus_path(*OUTPUTS)
    seen = set()
    for row in runs.iter_rows(named=True):
        size, validation, epochs = _printed(root / row["run"])
        assert validation > 0
        assert row["iterations"] == size * epochs, row["run"]
        # the forward loss kernel ran for the validation batches too: not the count
        assert row["iterations"] != (size + validation) * epochs
        assert "backward" in row["iterations_source"] and f"{size:,} training batches" in row["iterations_source"]
        assert row["time_per_iteration_ns"] == pytest.approx(row["kernel_time_ns"] / row["iterations"])
        seen.add(row["iterations"])
    # the numbers, each printed by some log of the folder
    assert {33468, 16734, 8367, 4184, 2092} <= seen
    assert not seen & {34768, 17384, 8692, 4347, 2174}


@pytest.mark.corpus
def test_the_runs_table_keeps_what_the_progress_lines_print(outputs):
    run = outputs.runs.filter(pl.col("run").str.ends_with("out.expCloudML.546939")).row(0, named=True)
    assert (run["epoch_steps"], run["logged_epochs"], run["validation_steps"]) == (4184, 1, 163)
    assert "Epoch: [0][0/4184]" in run["progress_source"] and "out.expCloudML.546939 line 3" in run["progress_source"]
    # the steady-state batch time: the printed times but the first batch's (2.96 s: the first data)
    assert 0.01e9 < run["step_time_ns"] < 0.5e9 and run["data_time_ns"] < run["step_time_ns"]


def test_progress_layouts_of_other_training_loops():
    tutorial = "\n".join(f"Epoch [{e}/2], Step [{s}/600], Loss: 0.5" for e in (1, 2) for s in range(100, 601, 100))
    got = progress_of(tutorial)
    assert (got.layout, got.epoch_steps, got.epochs) == ("pytorch-tutorial", 600, 2)
    cut = progress_of(tutorial.rsplit("\n", 2)[0])         # the second epoch stopped at step 400
    assert cut.epochs == 1
    keras = ("Epoch 1/2\n4184/4184 [==============================] - 130s 31ms/step - loss: 2.1\n"
             "Epoch 2/2\n4184/4184 [==============================] - 121s 29ms/step - loss: 1.9\n")
    got = progress_of(keras)
    assert (got.layout, got.epoch_steps, got.epochs) == ("keras", 4184, 2)
    assert got.step_time_s == pytest.approx(0.029)           # the second epoch: no compilation
    assert progress_of("no progress here") is None


def _kernel(run, name, count, time_ns, line):
    return {"run": run, "source_file": "k.csv", "source_line": line, "launch_id": line, "name": name,
            "short_name": name.split("(")[0], "kind": "summary", "count": count, "duration_ns": time_ns}


def _tables(kernels, runs):
    return {"kernels": schema.conform("kernels", pl.DataFrame(kernels, infer_schema_length=None)),
            "runs": schema.conform("runs", pl.DataFrame(runs, infer_schema_length=None)),
            "files": schema.conform("files", pl.DataFrame({"path": ["k.csv"], "family": ["nvprof"]}))}


FORWARD = "void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*)"
BACKWARD = "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>(float*)"


def test_validation_batches_the_log_prints_are_taken_off_a_forward_loss_count():
    """A profile of the forward loss only (no backward kernel named): 1,100 launches, of which
    the log prints 100 validation batches an epoch, 1 epoch."""
    kernels = [_kernel("r", "sgemm", 5000, 9e9, 1), _kernel("r", FORWARD, 1100, 1e6, 2)]
    runs = [{"run": "r", "validation_steps": 100, "logged_epochs": 1, "epoch_steps": 1000,
             "progress_source": "“Epoch: [0][0/1000]” [log line 3]", "cut_short": True}]
    got = run_iterations(_tables(kernels, runs)).row(0, named=True)
    assert got["iterations"] == 1000 and "less the 100 validation batches" in got["iterations_source"]
    # without printed progress the count says it could not tell them apart
    alone = run_iterations(_tables(kernels, [{"run": "r"}])).row(0, named=True)
    assert alone["iterations"] == 1100 and "training and validation batches alike" in alone["iterations_source"]


def test_the_backward_kernel_counts_before_the_printed_epoch_and_the_forward_loss():
    kernels = [_kernel("r", "sgemm", 5000, 9e9, 1), _kernel("r", FORWARD, 1100, 1e6, 2),
               _kernel("r", BACKWARD, 1000, 1e6, 3)]
    runs = [{"run": "r", "validation_steps": 100, "logged_epochs": 1, "epoch_steps": 1000,
             "progress_source": "“Epoch: [0][0/1000]” [log line 3]", "cut_short": False}]
    got = derive(_tables(kernels, runs)).runs().row(0, named=True)
    assert got["iterations"] == 1000 and "backward" in got["iterations_source"]
    assert "the log prints 1,000 training batches an epoch" in got["iterations_source"]
    # no loss kernel named at all: the printed epoch size, for a run not cut short
    plain = run_iterations(_tables([_kernel("r", "sgemm", 5000, 9e9, 1)], runs)).row(0, named=True)
    assert plain["iterations"] == 1000 and plain["iterations_source"].startswith("the log's epoch size, 1,000")
    short = run_iterations(_tables([_kernel("r", "sgemm", 5000, 9e9, 1)], [{**runs[0], "cut_short": True}]))
    assert not short.height


def test_optimizer_steps_count_as_step_ranges():
    kernels = [_kernel("r", "sgemm", 50, 9e6, 1)]
    tables = _tables(kernels, [{"run": "r"}])
    tables["regions"] = schema.conform("regions", pl.DataFrame({
        "run": ["r"] * 3, "kind": ["cpu_op"] * 3, "count": [1, 1, 1], "source_file": ["t.json"] * 3,
        "name": ["Optimizer.step#SGD.step"] * 3, "path": ["Optimizer.step#SGD.step"] * 3}))
    got = run_iterations(tables).row(0, named=True)
    assert got["iterations"] == 3 and "Optimizer.step#SGD.step" in got["iterations_source"]


def test_batch_times_of_a_replaying_profiler_are_not_the_jobs(tmp_path):
    """ncu (and nvprof --metrics) replay kernels: the batch times they let the program print are
    the profiler's. The epoch size still counts."""
    from roofreport.pipeline.progress import read_progress

    lines = "".join(f"Epoch: [0][{i}/50]\tTime 0.100 (0.100)\tData 0.010 (0.010)\n" for i in range(0, 50, 10))
    plain = tmp_path / "nvprof.log"
    plain.write_text("==1== NVPROF is profiling process 1\n" + lines)
    assert read_progress(plain, family="nvprof").step_time_s == pytest.approx(0.1)
    replayed = tmp_path / "metrics.log"
    replayed.write_text("==1== Some kernel(s) will be replayed on device 0 in order to collect all events/metrics.\n"
                        + lines)
    got = read_progress(replayed, family="nvprof")
    assert got.epoch_steps == 50 and got.step_time_s is None
    assert read_progress(plain, family="ncu").step_time_s is None
