"""No row lost in silence (issue #34): over every CSV log of the corpus, each file's data rows,
counted with Python's `csv` module (`tests/norowlost.py`), are its rows read plus the rows its
warnings say were left out, and a file with rows left out is `partial`, never "ok"."""

from __future__ import annotations

import pytest

import roofreport
from roofreport.pipeline.sniff import sniff
from tests import norowlost
from tests.conftest import CORPUS, corpus_path



def _csv_logs() -> list[str]:
    if not CORPUS.is_dir():
        return ["(corpus absent)"]
    found = []
    for path in sorted(CORPUS.rglob("*.csv")):
        sniffed = sniff(path)
        if sniffed.spec is not None and not (sniffed.variant or "").endswith(norowlost.FOLDED):
            found.append(str(path.relative_to(CORPUS)))
    return found


@pytest.mark.corpus
@pytest.mark.parametrize("name", _csv_logs())
def test_every_data_row_of_a_csv_log_is_read_or_warned(name):
    path = corpus_path(name)
    data = roofreport.read_file(str(path))
    (read,) = data.files
    if read.status == "error":
        assert read.error   # no row read, and the file says why: a failed input
        return
    count = norowlost.count(path.read_bytes(), data.tables, read.warnings)
    if read.status == "ok":
        assert (count.rows_warned, count.rows_out) == (0, count.rows_in), count
    else:
        assert read.status == "partial" and count.rows_warned, (read.status, count)
        assert count.rows_out + count.rows_warned >= count.rows_in, count


def test_the_count_leaves_out_tool_lines_headers_units_and_repeats():
    text = ("==PROF== Connected to process 1\n"
            '"Type","Time(%)","Time","Name"\n'
            ",%,s,\n"
            '"GPU activities",27.6,435.5,"k<a, b>(int)"\n'
            "\n"
            '"Type","Time(%)","Time","Name"\n'
            '"GPU activities",10.4,163.9,"sgemm"\n')
    assert norowlost.data_rows(text.encode()) == 2
    assert norowlost.data_rows(b"0, Tesla V100, 94 %\n1, Tesla V100, 3 %\n") == 2   # no header


def test_a_row_left_out_makes_the_file_a_failed_input(tmp_path):
    """A row that cannot be read: a warning with file, line and reason, the file `partial`,
    the command's exit code 1 and the file listed among the failures."""
    from click.testing import CliRunner

    from roofreport.cli import cli

    path = tmp_path / "results.stats.csv"
    path.write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
                    '"gemm_kernel(float*, int) [clone .kd]",10,1000,100,62.5\n'
                    '"cut_kernel(int)",4\n'
                    '"stencil(double*) [clone .kd]",6,600,100,37.5\n')
    data = roofreport.read_file(str(path))
    (read,) = data.files
    assert data.kernels.height == 2 and read.status == "partial" and read.failed
    (warning,) = read.warnings
    assert warning.code == "rocm.bad-row" and warning.line == 3 and "results.stats.csv:3:" in warning.message
    assert read.error.startswith(f"{path}:3: rows that could not be read were left out")
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--errors-only"])
    assert result.exit_code == 1 and "partial" in result.output and "results.stats.csv" in result.output
