"""The library: `roofreport.read`, `read_file`, `analyze`, `build_report`, as a user's script and
the README call them, give what the CLI gives."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

import roofreport
from tests.conftest import ROOT, SAMPLE_LOGS, corpus_path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roofreport", *args], capture_output=True, text=True,
                          cwd=ROOT)


@pytest.mark.corpus
@pytest.mark.slow
def test_a_plain_script_without_a_main_guard_reads_a_course_folder_as_parse_does(tmp_path):
    """str paths, many files (the worker pool starts), no `if __name__ == "__main__":`: the
    workers must not run the script again."""
    folder = corpus_path("course", "pramitmallick-examples")
    script = tmp_path / "count.py"
    script.write_text(textwrap.dedent(f"""\
        import json
        import roofreport
        print("script body ran")
        data = roofreport.read({str(folder)!r}, jobs=2)
        print(json.dumps({{"kernels": data.kernels.height, "runs": data.runs.height,
                          "files": len(data.files)}}))
        """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("script body ran") == 1
    counts = json.loads(out.stdout.splitlines()[-1])
    assert counts["files"] > 12   # enough for the pool

    parsed = _cli("parse", str(folder), "-o", str(tmp_path / "tables"), "-q")
    assert parsed.returncode in (0, 1), parsed.stderr
    assert counts == {"kernels": pl.read_parquet(tmp_path / "tables" / "kernels.parquet").height,
                      "runs": pl.read_parquet(tmp_path / "tables" / "runs.parquet").height,
                      "files": pl.read_parquet(tmp_path / "tables" / "files.parquet").height}


def test_read_takes_a_str_a_path_or_a_list_and_walks_folders():
    by_str = roofreport.read(str(SAMPLE_LOGS), jobs=1)
    by_list = roofreport.read([SAMPLE_LOGS / "a100", str(SAMPLE_LOGS / "v100")], jobs=1)
    assert by_str.kernels.height > by_list.kernels.height > 0
    assert set(by_str.tables) == {"kernels", "metrics", "activities", "api_calls", "samples", "regions",
                                  "steps", "estimates", "runs", "files"}
    for name in ("kernels", "metrics", "activities", "api_calls", "samples", "regions", "steps", "estimates", "runs"):
        assert getattr(by_str, name).equals(by_str.tables[name])
    assert {f.status for f in by_str.files} == {"ok", "skipped"}
    assert by_str.inputs == [SAMPLE_LOGS]


def test_read_file_gives_one_files_dataset():
    path = SAMPLE_LOGS / "v100" / "dmon" / "gpu_utilization_v100.txt"
    data = roofreport.read_file(str(path))
    assert [f.path for f in data.files] == [str(path)]
    assert data.files[0].status == "ok" and data.samples.height == data.files[0].rows["samples"]
    with pytest.raises(roofreport.UsageError, match="not a file"):
        roofreport.read_file(SAMPLE_LOGS)


def test_bad_arguments_are_usage_errors(tmp_path):
    with pytest.raises(roofreport.UsageError, match="no such file"):
        roofreport.read(tmp_path / "missing")
    with pytest.raises(roofreport.UsageError, match="jobs"):
        roofreport.read(SAMPLE_LOGS, jobs=0)
    data = roofreport.read(SAMPLE_LOGS / "v100" / "dmon", jobs=1)
    with pytest.raises(roofreport.UsageError, match="START:END"):
        roofreport.analyze(data, window="sixty")
    with pytest.raises(roofreport.UsageError, match=".pdf or .html"):
        roofreport.build_report(data, tmp_path / "report.docx")
    with pytest.raises(roofreport.UsageError, match="one of the inputs"):
        data.write(SAMPLE_LOGS / "v100" / "dmon")


def test_exclude_leaves_files_unread_and_says_so():
    data = roofreport.read(SAMPLE_LOGS, jobs=1, exclude=["k80_sweep/*", "*.toml"])
    skipped = {Path(f.path).name: f.error for f in data.files if f.status == "skipped"}
    assert skipped["roofreport.toml"] == "excluded by '*.toml'"
    assert all(error == "excluded by 'k80_sweep/*'" for name, error in skipped.items() if name.startswith("out."))
    assert not data.kernels.filter(pl.col("source_file").str.contains("k80_sweep")).height


def test_progress_reports_every_file(capsys):
    seen = []
    data = roofreport.read(SAMPLE_LOGS, jobs=1, progress=lambda done, total, name: seen.append((done, total)))
    # one call per file found (a file is sniffed and read by one task), the last at total
    assert [done for done, _ in seen] == list(range(1, len(data.files) + 1))
    assert seen[-1] == (len(data.files), len(data.files))


def test_analyze_gives_the_frames_the_report_draws():
    data = roofreport.read(SAMPLE_LOGS, jobs=1)
    analysis = roofreport.analyze(data, top=3, window="5:60")
    assert isinstance(analysis, roofreport.Analysis) and analysis.dataset is data
    assert analysis.settings == roofreport.AnalysisSettings(top=3, window=(5.0, 60.0))
    assert analysis.top.group_by("run").len()["len"].max() <= 3
    assert analysis.utilization_window is not None and analysis.roofline.height
    # from paths directly, with read's defaults
    assert roofreport.analyze(SAMPLE_LOGS / "a100").runs.height == 3   # resnet18, vgg11, lenet5


def test_build_report_writes_a_pdf_from_paths_a_dataset_or_an_analysis(tmp_path):
    small = SAMPLE_LOGS / "v100" / "vgg11"
    written = roofreport.build_report(str(small), tmp_path / "a.pdf", html=tmp_path / "a.html", title="vgg11")
    assert written == [tmp_path / "a.html", tmp_path / "a.pdf"]
    assert (tmp_path / "a.pdf").read_bytes().startswith(b"%PDF")
    analysis = roofreport.analyze(roofreport.read(small))
    roofreport.build_report(analysis, tmp_path / "b.html", title="vgg11")
    assert (tmp_path / "b.html").read_text(encoding="utf-8") == (tmp_path / "a.html").read_text(encoding="utf-8")
    with pytest.raises(roofreport.UsageError, match="analyze"):
        roofreport.build_report(analysis, tmp_path / "c.html", top=3)


def test_the_cli_and_the_library_write_the_same_report(tmp_path):
    small = SAMPLE_LOGS / "a100" / "vgg11"
    cli = _cli("build", str(small), "-o", str(tmp_path / "cli.html"), "--top", "4", "-q")
    assert cli.returncode == 0, cli.stderr
    roofreport.build_report(small, tmp_path / "lib.html", top=4)
    assert (tmp_path / "cli.html").read_text(encoding="utf-8") == (tmp_path / "lib.html").read_text(encoding="utf-8")


def test_dataset_write_is_what_parse_writes(tmp_path):
    data = roofreport.read(SAMPLE_LOGS / "a100", jobs=1)
    written = data.write(tmp_path / "lib")
    assert [p.name for p in written] == [p.name for p in roofreport.api.table_files(tmp_path / "lib")]
    cli = _cli("parse", str(SAMPLE_LOGS / "a100"), "-o", str(tmp_path / "cli"), "-q")
    assert cli.returncode == 0, cli.stderr
    for path in written:
        assert pl.read_parquet(path).equals(pl.read_parquet(tmp_path / "cli" / path.name)), path.name


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use from Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readmes_use_from_python_example_runs_as_written(tmp_path):
    (tmp_path / "sample_logs").symlink_to(SAMPLE_LOGS, target_is_directory=True)
    # (after the example: its `kernel_time`, the kernels marked in_run_total summed per run,
    # against the runs table's kernel_time_ns)
    check = ("\nimport json\nprint('SUMS', json.dumps([dict(kernel_time.iter_rows()), "
             "dict(data.runs.select('run', 'kernel_time_ns').drop_nulls().iter_rows())]))\n")
    out = subprocess.run([sys.executable, "-c", _readme_example() + check], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF")
    assert (tmp_path / "tables" / "kernels.parquet").is_file()
    assert "a100/vgg11" in out.stdout
    summed, kernel_time = json.loads(out.stdout.split("SUMS ", 1)[1].splitlines()[0])
    assert len(kernel_time) >= 10 and summed.keys() == kernel_time.keys()
    for run, total in kernel_time.items():
        assert summed[run] == pytest.approx(total, rel=1e-9), run
    assert kernel_time["a100/resnet18"] == pytest.approx(21.1e6, rel=0.01)   # the 21.1 ms, not 46.7


def test_the_public_names_are_typed_and_documented():
    assert (ROOT / "roofreport" / "py.typed").is_file()
    for name in roofreport.__all__:
        value = getattr(roofreport, name)
        if callable(value):
            assert value.__doc__, name
    assert "paths" in roofreport.read.__annotations__ and "return" in roofreport.read.__annotations__
