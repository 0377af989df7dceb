"""Known-bad nvidia-smi inputs, named by example: each gives a coded warning or error at its
file, line and column (with the line drawn under a caret), everything else in the file is
still read, and nothing raises. One test walks the catalogue."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from roofreport.families import smi
from roofreport.families.common.textio import Document, Head
from roofreport.families.smi import read as smi_read
from roofreport.tables import schema


@dataclass(frozen=True)
class Bad:
    text: str
    code: str                 # warning code, or "error" for the file's error
    line: int | None          # where it is reported
    column: int | None        # the caret's column (1-based) when the message draws one
    kept: int                 # samples still read from the rest of the file


CATALOGUE = {
    "query row with extra fields": Bad(
        "index, utilization.gpu [%]\n0, 5 %\n0, 6 %, 7 %\n0, 9 %\n", "smi.bad-row", 3, 9, 2),
    "query row cut short": Bad(
        "index, utilization.gpu [%], memory.used [MiB]\n0, 5 %, 100 MiB\n0, 6\n0, 9 %, 90 MiB\n",
        "smi.bad-row", 3, 5, 2),
    "query value without its unit": Bad(
        "index, utilization.gpu [%]\n0, 5 %\n0, 6\n", "smi.bad-value", 3, None, 2),
    "query value that is text": Bad(
        "index, power.draw [W]\n0, 50.5 W\n0, fifty W\n", "smi.bad-value", 3, None, 2),
    "garbage between dmon rows": Bad(
        "# gpu   pwr    sm\n# Idx     W     %\n    0   100    50\nSegmentation fault\n    0   101    51\n",
        "smi.bad-row", 4, 1, 2),
    "dmon row missing columns": Bad(
        "# gpu   pwr    sm\n# Idx     W     %\n    0   100    50\n    0   101\n", "smi.bad-row", 4, 1, 1),
    "table cut after a GPU's name line": Bad(
        "Sun Jun 24 21:32:04 2018\n"
        "| NVIDIA-SMI 384.130                Driver Version: 384.130                   |\n"
        "|   0  TITAN X (Pascal)    Off  | 00000000:02:00.0 Off |                  N/A |\n"
        "| 34%   60C    P2    75W / 250W |  11996MiB / 12189MiB |     27%      Default |\n"
        "|   1  TITAN X (Pascal)    Off  | 00000000:03:00.0 Off |                  N/A |\n",
        "smi.truncated-table", 5, None, 1),
    "-q report with a damaged line": Bad(
        "==============NVSMI LOG==============\n\nTimestamp                                 : Wed Aug 30 12:18:12 2023\n"
        "GPU 00000000:08:00.0\n    Product Name                          : NVIDIA GeForce RTX 4090\n"
        "    Utilization\n        Gpu                               : 2 %\n\x01\x02:\x03 garbage\n",
        "smi.bad-row", 8, 1, 1),
    "nvidia-smi could not reach the driver": Bad(
        "$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n", "error", 2, None, 0),
    "header and no rows": Bad("timestamp, utilization.gpu [%]\n", "error", None, None, 0),
}


def _head(doc: Document) -> Head:
    return Head(path=doc.path, raw=doc.data, encoding="utf-8", text=doc.text(), size=len(doc.data),
                truncated=False)


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_catalogue_of_bad_inputs(name):
    bad = CATALOGUE[name]
    doc = Document.from_text(bad.text, display="bad.log")
    variant = smi.sniff_text(_head(doc))
    assert variant, "a damaged nvidia-smi log is still recognised"
    result = smi_read.parse_text(doc, variant)
    samples = result.tables.get("samples", schema.empty("samples"))
    assert samples.height == bad.kept
    if bad.code == "error":
        assert result.error is not None and result.error.line == bad.line
        assert result.error.path == "bad.log"
        return
    found = [w for w in result.warnings if w.code == bad.code]
    assert found and found[0].line == bad.line, result.warnings
    if bad.column is not None:
        first, *_, caret = found[0].message.splitlines()
        assert first.startswith(f"bad.log:{bad.line}:{bad.column}:")
        assert caret.index("^") == 4 + bad.column - 1
        assert found[0].message.splitlines()[1].strip() in bad.text


def test_the_failure_is_nvidia_smis_own_message():
    doc = Document.from_text("No devices were found\n", display="smi.log")
    assert smi.sniff_text(_head(doc)) == "failed run"
    result = smi_read.parse_text(doc, "failed run")
    assert result.error.message == "nvidia-smi reported: No devices were found"


def test_a_header_lark_refuses_is_reported_not_raised():
    long_header = "# gpu " + "pwr " * 20000
    doc = Document.from_text(f"{long_header}\n# Idx W\n    0   100\n", display="dmon.txt")
    result = smi_read.parse_text(doc, "dmon")
    assert "smi.bad-header" in {w.code for w in result.warnings}


def test_a_damaged_row_does_not_hide_a_long_headerless_capture():
    rows = [f"2025/09/08 14:14:{i:02d}.120, {i % 100}, 11409" for i in range(40)]
    rows[17] = "2025/09/08 14:14:17.1\x01\x02 garbage"
    doc = Document.from_text("\n".join(rows) + "\n", display="gpu_stats.csv")
    assert smi.sniff_text(_head(doc)) == "query csv (noheader)"
    result = smi_read.parse_text(doc, "query csv (noheader)")
    samples = result.tables["samples"]
    assert samples.height == 39 and 18 not in samples["source_line"].to_list()
    assert [w.line for w in result.warnings if w.code == "smi.bad-row"] == [18]
