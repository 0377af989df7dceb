"""A new user's first ten minutes (issue 25, item 4): each rough edge with its exact message and
exit code. The logs are the corpus's real ones (copied into a temporary folder where a test
needs to own the folder) and sample_logs/."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import roofreport
from roofreport.cli import cli
from tests.conftest import ROOT, SAMPLE_LOGS, corpus_path

ONE_KERNEL = ("ncu", "text", "v100_locale_decimal_comma_ax_2020.txt")   # one kernel, no warning


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def logs(tmp_path) -> Path:
    """A folder of two good logs and a note that is no log."""
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(corpus_path(*ONE_KERNEL), folder / "ncu.txt")
    shutil.copy(SAMPLE_LOGS / "a100" / "resnet18" / "nsys-profile-stats.txt", folder / "nsys.txt")
    (folder / "notes.md").write_text("# what we ran\n")
    return folder


@pytest.fixture
def cut_log(tmp_path) -> Path:
    """An ncu log cut in half, as a copy that stopped mid-write leaves it."""
    whole = corpus_path("ncu", "text", "a100_vgg11_imagenet_roofline_metrics_ncu2020.txt").read_bytes()
    path = tmp_path / "cut" / "ncu-half.txt"
    path.parent.mkdir()
    path.write_bytes(whole[:len(whole) // 2])
    return path


@pytest.fixture
def read_only(tmp_path):
    """A folder nobody may write to, root included (root ignores permissions: an immutable
    folder, `chattr +i`, where it can make one)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
        if made.returncode != 0 or os.access(folder, os.W_OK):
            pytest.skip(f"root cannot make a read-only folder here (chattr +i: {made.stderr.decode().strip()})")
        yield folder
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)


# -- what `build` says, and `-v` ---------------------------------------------------------------

def test_build_says_what_it_does_after_reading(logs, tmp_path):
    out = tmp_path / "report.html"
    result = run("build", logs, "-o", out)
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "3 files: 2 ok, 1 skipped",
        "  1 warning(s); `-v` or `roofreport inspect` lists them",
        "roofreport: analysing 1 run…",   # one folder: one run
        f"roofreport: rendering HTML {out}…",
        f"wrote {out}",
    ]


def test_build_v_lists_every_warning(logs, tmp_path):
    result = run("build", logs, "-o", tmp_path / "report.html", "-v")
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    assert lines[1:3] == [
        f"  {logs / 'nsys.txt'}:",
        "    warning [nsys.truncated-name] line 47: 25 names in the gpukernsum table (line 45) were cut by nsys "
        "with '…': different kernels may share one cut name; 2 of them repeat a name already listed",
    ]


# -- inspect -----------------------------------------------------------------------------------

def test_inspect_ends_with_a_count_per_status(logs, cut_log):
    shutil.copy(cut_log, logs / "ncu-half.txt")
    result = run("inspect", logs)
    assert result.exit_code == 1   # the cut log failed
    assert result.stdout.splitlines()[-1] == "4 files: 2 ok, 1 partial, 1 skipped"


def test_inspect_errors_only_lists_the_files_that_failed(logs, cut_log):
    shutil.copy(cut_log, logs / "ncu-half.txt")
    result = run("inspect", logs, "--errors-only")
    assert result.exit_code == 1
    listed = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert listed == [str(logs / "ncu-half.txt"), "4 files: 2 ok, 1 partial, 1 skipped"]
    objects = json.loads(run("inspect", logs, "--errors-only", "--json").stdout)
    assert [(o["path"], o["status"]) for o in objects] == [(str(logs / "ncu-half.txt"), "partial")]


# -- an ncu log cut in half ---------------------------------------------------------------------

def test_an_ncu_log_cut_in_half_is_partial(cut_log):
    result = run("inspect", "--json", cut_log)
    assert result.exit_code == 1
    (found,) = json.loads(result.stdout)
    assert found["status"] == "partial" and found["rows"]["kernels"] == 84   # the kernels before the cut
    assert found["error"] == (f"{cut_log}:1515: the log was cut short: log ends inside a metrics table "
                              "(line 1515): the last kernel may be incomplete; the kernels before are kept")
    assert [w["code"] for w in found["warnings"]] == ["ncu.truncated"]


# -- print(dataset), print(analysis) ------------------------------------------------------------

def test_print_of_a_dataset_and_an_analysis_is_a_few_lines():
    folder = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning")   # 12 logs, 16 other files
    data = roofreport.read(folder)
    text = str(data)
    assert text.splitlines() == [
        "<Dataset: 28 files (16 skipped, 12 ok), 6 runs, 0 warnings",
        "  rows: kernels 3,058, metrics 14,927, activities 2,260",
        f"  from: {folder}>",
    ]
    assert repr(data) == text
    assert data.kernels.height == 3058 and data.metrics.height == 14927
    analysis = roofreport.analyze(data, top=3)
    lines = repr(analysis).splitlines()
    assert len(lines) == 3 and len(repr(analysis)) < 600
    assert lines[0] == "<Analysis: 6 runs (6 with kernel time, 6 with FLOPs) on 2 GPU models: A100-SXM4-40GB, V100-SXM2-16GB"
    assert lines[1].startswith("  rows: roofline 9, kernel_roofline 1064, off_chart 9, share 48, context 3, leaders 6, top 18,")
    assert lines[2] == "  settings: top=3>"


# -- folders without logs, outputs that cannot be written, outputs among the inputs -------------

def test_a_folder_without_any_profiler_log_is_an_error(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("# nothing profiled here\n")
    (folder / "train.py").write_text("print('hi')\n")
    out = tmp_path / "report.pdf"
    for command in (["build", folder, "-o", out], ["summary", folder], ["parse", folder, "-o", tmp_path / "t"]):
        result = run(*command)
        assert result.exit_code == 1
        assert result.stderr.splitlines()[-1] == (
            f"roofreport: error: no profiler log found in {folder}: 2 files, none of them a log roofreport reads "
            f"(`roofreport inspect {folder}` says what each one is)")
    assert not out.exists() and not (tmp_path / "t").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("build", empty, "-o", out)
    assert (result.exit_code, result.stderr) == (1, f"roofreport: error: no profiler log found in {empty}: no files\n")


def test_an_output_folder_that_cannot_be_written_is_refused_before_any_work(logs, read_only):
    report = read_only / "report.pdf"
    result = run("build", logs, "-o", report)
    assert result.exit_code == 2
    assert result.stderr == (f"roofreport: usage error: cannot write {report}: the folder {read_only} "
                             "is not writable\n")   # nothing read: no file count printed
    tables = read_only / "tables"
    result = run("parse", logs, "-o", tables)
    assert (result.exit_code, result.stderr) == (
        2, f"roofreport: usage error: cannot write {tables}: the folder {read_only} is not writable\n")


def test_parse_update_into_a_read_only_dataset_is_a_clear_error(logs, tmp_path):
    dataset = tmp_path / "dataset"
    assert run("parse", logs, "-o", dataset, "--update", "-q").exit_code == 0
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(dataset)], capture_output=True).returncode != 0:
            pytest.skip("root cannot make a read-only folder here (chattr +i)")
    else:
        dataset.chmod(0o555)
    try:
        result = run("parse", logs, "-o", dataset, "--update")
    finally:
        subprocess.run(["chattr", "-i", str(dataset)], capture_output=True) if os.geteuid() == 0 \
            else dataset.chmod(0o755)
    assert (result.exit_code, result.stderr) == (2, f"roofreport: usage error: cannot write {dataset}: permission denied\n")


def test_an_output_inside_an_input_folder_is_written_with_a_warning(logs):
    report = logs / "report.html"
    result = run("build", logs, "-o", report)
    assert result.exit_code == 0 and report.is_file()
    assert result.stderr.splitlines()[0] == (
        f"roofreport: warning: {report} is inside the input folder {logs}: the next run over {logs} will read it "
        "back (write it elsewhere, or leave it out with --exclude)")


# -- Ctrl-C ------------------------------------------------------------------------------------

# The child stops inside the PDF writer, half a PDF in its temporary file, until it is interrupted:
# the signal lands while writing whatever the machine's load (a timed sleep raced the render).
_PAUSED_IN_PDF = """
import sys, time
import roofreport.report.render as render
def stalled_write_pdf(html, target):
    with open(target, "wb") as half:
        half.write(b"%PDF-1.7 half")
    print("paused in the PDF writer", file=sys.stderr, flush=True)
    time.sleep(600)
render.write_pdf = stalled_write_pdf
from roofreport.cli import main
sys.argv = ["roofreport", *sys.argv[1:]]
main()
"""


def test_ctrl_c_exits_130_and_leaves_nothing_half_written(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-c", _PAUSED_IN_PDF, "build", str(SAMPLE_LOGS), "-o", str(out / "report.pdf"),
               "--html", str(out / "report.html")]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith("paused in the PDF writer"):
            process.send_signal(signal.SIGINT)
            break
    rest = process.stderr.read()
    assert process.wait(timeout=120) == 130, "".join(seen) + rest
    assert rest.rstrip().splitlines()[-1] == "roofreport: interrupted"
    # the HTML was whole before the PDF began; of the PDF, not even its temporary file is left
    assert sorted(path.name for path in out.iterdir()) == ["report.html"]
    assert (out / "report.html").read_text(encoding="utf-8").rstrip().endswith("</html>")


def test_a_gpu_the_table_does_not_know_is_refused_with_the_closest_names_before_reading(tmp_path):
    # issue 33: a warning and a run without peaks became a usage error, before anything is read
    result = run("parse", SAMPLE_LOGS / "jetson_orin", "-o", tmp_path / "tables", "--gpu", "Jetson AGX Orn 64")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "roofreport: usage error: --gpu 'Jetson AGX Orn 64' is not in the GPU table (closest: Jetson AGX Orin "
        "64GB, Jetson AGX Thor, Jetson AGX Orin 32GB): no peaks (add it with --peaks)"]
    assert not (tmp_path / "tables").exists()
    with pytest.raises(roofreport.UsageError, match="'Jetson AGX Orn 64' is not in the GPU table"):
        roofreport.read(SAMPLE_LOGS / "jetson_orin", gpu="Jetson AGX Orn 64")
    known = run("parse", SAMPLE_LOGS / "jetson_orin", "-o", tmp_path / "known", "--gpu", "Jetson AGX Orin 64GB")
    assert known.exit_code == 0 and "warning" not in known.stderr
