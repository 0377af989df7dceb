"""The Empirical Roofline Toolkit's `roofline.json` (issue #34): its measured ceilings go through the
one measured-peaks path `roofline.csv` takes (`model/roofline.measured_peaks`), and the report
says they were measured, by which file. `sample_logs/amd/mi300x/stencil/roofline.json` is written
as ERT 1.1.0's `ert_core.py` `build_database` writes it (`json.dump(..., indent=3)`)."""

from __future__ import annotations

import json

import polars as pl
import pytest

import roofreport
from roofreport.families.common.textio import Document
from roofreport.families.rocm import ert
from roofreport.pipeline.sniff import sniff
from tests.conftest import SAMPLE_LOGS

STENCIL = SAMPLE_LOGS / "amd" / "mi300x" / "stencil"
FILE = STENCIL / "roofline.json"


def _measured() -> tuple[float, dict[str, float]]:
    """(GFLOP/s, level -> GB/s) as the file says them (json, not the reader)."""
    empirical = json.loads(FILE.read_text())["empirical"]
    return empirical["gflops"]["data"][0][1], dict(empirical["gbytes"]["data"])


def test_the_database_is_sniffed_and_every_entry_read():
    found = sniff(FILE)
    assert (found.family, found.variant) == ("rocm", "ERT roofline json")
    result = ert.parse(_doc(FILE), found.variant)
    assert result.error is None and not result.warnings
    gflops, levels = _measured()
    rows = {row["metric"]: row for row in result.tables["metrics"].iter_rows(named=True)}
    assert rows["FP64Flops"]["value"] == pytest.approx(gflops * 1e9)           # ERT_PRECISION FP64
    assert rows["HBMBw"]["value"] == pytest.approx(levels["DRAM"] * 1e9)        # the device memory
    assert rows["L2Bw"]["value"] == pytest.approx(levels["L2"] * 1e9) and rows["L1Bw"]["unit"] == "byte/second"
    assert set(result.tables["metrics"]["section"]) == {"roofline"} and len(rows) == 1 + len(levels)


def test_its_ceilings_are_the_runs_measured_peaks_shown_as_such():
    analysis = roofreport.analyze(roofreport.read(STENCIL, jobs=1))
    gflops, levels = _measured()
    rows = {row["precision"]: row for row in analysis.roofline.filter(pl.col("run") == "amd/mi300x/stencil")
            .iter_rows(named=True)}
    fp64, tensor = rows["fp64"], rows["tensor"]     # the stencil's VALU kernels, its small DGEMM
    assert fp64["peak_flops_per_s"] == pytest.approx(gflops * 1e9)
    assert fp64["peak_source"].startswith("FP64: measured (roofline.json); DRAM: measured (roofline.json)")
    for row in (fp64, tensor):
        assert row["peak_dram_bytes_per_s"] == pytest.approx(levels["DRAM"] * 1e9)
    # ERT measured no matrix rate: the MFMA roof stays the datasheet's, said so
    assert tensor["peak_flops_per_s"] == pytest.approx(163.4e12) and tensor["peak_source"].startswith("Tensor FP64: datasheet")


def test_a_rate_over_several_precisions_is_no_precisions_peak_and_a_bad_entry_is_warned(tmp_path):
    document = json.loads(FILE.read_text())
    document["empirical"]["metadata"]["ERT_PRECISION"] = ["FP64", "FP32"]
    document["empirical"]["gbytes"]["data"].append(["HBM", "n/a"])
    path = tmp_path / "roofline.json"
    path.write_text(json.dumps(document, indent=3))
    result = ert.parse(_doc(path), ert.VARIANT)
    metrics = set(result.tables["metrics"]["metric"])
    assert "Flops" in metrics and "FP64Flops" not in metrics and "FP32Flops" not in metrics
    assert [w.code for w in result.warnings] == ["rocm.bad-row"] and "'HBM'" in result.warnings[0].message


def test_a_json_of_no_ert_database_is_not_claimed(tmp_path):
    other = tmp_path / "roofline.json"
    other.write_text(json.dumps({"model": "llama", "peak_gb_per_s": 3000}))
    assert sniff(other).family is None


def _doc(path):
    return Document.open(path)
