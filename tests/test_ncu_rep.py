"""Binary Nsight Compute reports (`.ncu-rep`, `.nsight-cuprof-report`) read with NVIDIA's
`ncu_report` module, the `ncu-rep` extra.

Every report of the corpus is read. Where ncu exported the same report (derived/MANIFEST.tsv
names each export's source report), the report gives the export's kernels, launch ids and
durations, and, against the raw pages (the exports that carry the counters), the same counters
in the same units and the same FLOPs, bytes, clocks and ceilings, to the export's printed
digits. A damaged report is an error, or a partial read, for that file alone. Without the
module a report is skipped with advice that names the extra and the export command.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from roofreport.enrich.counters import counter_names
from roofreport.families import ncu
from roofreport.families.common.numbers import parse_number
from roofreport.families.ncu.rep import _nvtx_path, number_text, parse_rep, printed_unit
from roofreport.pipeline.ingest import ingest
from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS, corpus_path
from tests.test_ncu_derived import _half_digit

REPORTS = sorted(p.name for p in (CORPUS / "ncu" / "rep").glob("*")) if CORPUS.is_dir() else []
DERIVED = CORPUS / "derived"
# kernel columns derived from counters, compared with the raw pages' (details pages have none)
COUNTED = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "dram_bytes", "l2_bytes",
           "l1_bytes", "sm_clock_hz", "peak_flops_fp32", "peak_flops_fp64", "peak_flops_fp16",
           "peak_dram_bytes_per_s", "peak_l2_bytes_per_s", "peak_l1_bytes_per_s"]
# How close a raw page's derived numbers come to the report's unrounded counters: the CSV pages
# print rates to 6 decimals (auto units) or 2 (base units) and some FLOPs come from rates; the
# text raw page prints 3 significant digits (half a unit of the third is 5e-3).
ROUNDING = {"raw_base.csv": 1e-5, "raw.csv": 1e-5, "raw.txt": 5e-3}


def _needs_module() -> None:
    if not ncu.report_module_installed():
        pytest.skip("NVIDIA's ncu_report module is not installed: its licence allows it only on systems "
                    "with NVIDIA GPUs, so `make test` leaves it out; run `make test-ncu-rep` on such a machine")


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _manifest() -> dict[str, dict[str, str]]:
    """report file name -> its row of ncu/MANIFEST.tsv."""
    return {row["file"].removeprefix("rep/"): row for row in _rows(CORPUS / "ncu" / "MANIFEST.tsv")
            if row["file"].startswith("rep/")}


def _exports() -> list[tuple[str, str]]:
    """(report, export) for every export of a corpus report, from derived/MANIFEST.tsv."""
    return [(row["source_report"].removeprefix("ncu/rep/"), row["file"].removeprefix("ncu/"))
            for row in _rows(DERIVED / "MANIFEST.tsv") if row["source_report"].startswith("ncu/rep/")]


def _read(path: Path):
    return ingest([path], jobs=1)


def _report(name: str):
    _needs_module()
    data = _read(corpus_path("ncu", "rep", name))
    (outcome,) = data.files
    assert outcome.status == "ok", outcome.error
    return data, outcome


def test_the_corpus_has_reports_of_both_kinds_and_exports_of_them():
    corpus_path("ncu", "rep")
    assert {Path(name).suffix for name in REPORTS} == {".ncu-rep", ".nsight-cuprof-report"}
    exported = {report for report, _ in _exports()}
    assert exported <= set(REPORTS) and len(exported) >= 7


@pytest.mark.parametrize("name", REPORTS)
def test_every_report_is_read(name):
    data, outcome = _report(name)
    assert outcome.family == "ncu" and outcome.warnings == []
    kernels = data["kernels"]
    assert kernels.height > 0 and kernels["name"].null_count() == 0
    assert kernels["launch_id"].to_list() == list(range(kernels.height))
    assert kernels["source_line"].to_list() == [i + 1 for i in range(kernels.height)]
    assert (kernels["kind"] == "launch").all() and (kernels["count"] == 1).all()
    metrics = data["metrics"]
    assert set(metrics["launch_id"].unique()) == set(kernels["launch_id"])
    assert not metrics["metric"].str.contains(":").any()  # `group:`/`breakdown:` are no metrics
    # the device and the ncu that wrote the report, as the corpus manifest records them
    row = _manifest()[name]
    assert data["runs"]["gpu"].to_list() == [row["gpu"]]
    version = row["ncu_version"].split()[0]
    assert outcome.tool_version == (version if version[0].isdigit() else None)


@pytest.mark.parametrize(("report", "export"), _exports())
def test_a_report_gives_the_kernels_durations_and_flops_of_its_exports(report, export):
    data, _ = _report(report)
    exported = _read(corpus_path("derived", "ncu", export))
    (outcome,) = exported.files
    if outcome.status == "error":  # ncu 2022.3, which exported the corpus, refused the report
        assert "ncu reported: Failed to load report file" in outcome.error
        return
    got, want = data["kernels"], exported["kernels"].sort("launch_id")
    assert got["name"].to_list() == want["name"].to_list()
    assert got["launch_id"].to_list() == want["launch_id"].to_list()
    slack = _half_digit(exported["metrics"])
    for launch, exact, printed in zip(got["launch_id"], got["duration_ns"], want["duration_ns"]):
        assert exact == pytest.approx(printed, abs=slack.get(launch, 0.0) + 1e-6 * printed), launch
    suffix = export.split(".", 1)[1]
    if suffix in ROUNDING:
        rounding = ROUNDING[suffix]
        for column in [c for c in COUNTED if want[c].null_count() < want.height]:
            assert got[column].null_count() == 0, column
            assert got[column].to_list() == pytest.approx(want[column].to_list(), rel=rounding), column


@pytest.mark.parametrize("report", sorted({r for r, e in _exports() if e.endswith(".raw_base.csv")}))
def test_a_report_has_its_raw_pages_counters_in_the_same_units(report):
    """The counters the analyses read: same names, same (base) units, same values to the
    export's two printed decimals."""
    data, _ = _report(report)
    export = _read(corpus_path("derived", "ncu", Path(report).stem + ".raw_base.csv"))
    columns = ["launch_id", "metric", "unit", "value"]
    got, want = (d["metrics"].filter(pl.col("metric").is_in(counter_names())).select(columns)
                 for d in (data, export))
    both = got.join(want, on=["launch_id", "metric"], suffix="_export")
    assert both.height >= 0.9 * want.height > 0
    assert both.filter(pl.col("unit") != pl.col("unit_export")).height == 0
    far = both.filter((pl.col("value") - pl.col("value_export")).abs()
                      > 0.005 + 1e-12 * pl.col("value_export").abs())
    assert far.height == 0, far


# -- damage ----------------------------------------------------------------------------------

def _cut(tmp_path: Path, name: str, fraction: float) -> Path:
    data = corpus_path("ncu", "rep", name).read_bytes()
    cut = tmp_path / f"cut-{name}"
    cut.write_bytes(data[:int(len(data) * fraction)])
    return cut


def test_a_report_cut_short_keeps_the_results_before_the_cut(tmp_path):
    """ncu_report 2026 reads the results before the cut (and the cut one without a name);
    2025.3 reads none of a cut report: a partial read or an error, never an exception."""
    _needs_module()
    whole, _ = _report("gpu_power_model_PS1_100.ncu-rep")
    data = _read(_cut(tmp_path, "gpu_power_model_PS1_100.ncu-rep", 0.8))
    (outcome,) = data.files
    if outcome.status == "error":
        assert "no result of this Nsight Compute report could be read" in outcome.error
        assert not outcome.rows
        return
    assert outcome.status == "partial"
    assert "could not be read" in outcome.error and "the others are kept" in outcome.error
    kept = data["kernels"]
    assert 0 < kept.height < whole["kernels"].height
    assert kept["duration_ns"].to_list() == whole["kernels"]["duration_ns"].head(kept.height).to_list()


def test_a_report_with_nothing_readable_fails_alone(tmp_path, capfd):
    _needs_module()
    garbage = tmp_path / "garbage.ncu-rep"
    garbage.write_bytes(ncu.REPORT_MAGIC + bytes(range(256)) * 20)
    cut = _cut(tmp_path, "speedy_scan_profile.ncu-rep", 0.1)
    good = corpus_path("derived", "ncu", "speedy_scan_profile.raw_base.csv")
    data = ingest([garbage, cut, good], jobs=1)
    by_path = {Path(o.path).name: o for o in data.files}
    for name in (garbage.name, cut.name):
        assert by_path[name].status == "error"
        assert "no result of this Nsight Compute report could be read" in by_path[name].error
        assert {w.code for w in by_path[name].warnings} <= {"ncu.report-format"}
    assert by_path[good.name].status == "ok" and data["kernels"].height == 1
    # the module's own complaints (protobuf, on stderr) stay off the user's terminal
    assert capfd.readouterr().err == ""


# -- without the module ----------------------------------------------------------------------

def test_without_the_module_a_report_is_skipped_naming_the_extra_and_the_export(monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # `import ncu_report` fails
    path = corpus_path("ncu", "rep", "speedy_scan_profile.ncu-rep")
    sniffed = sniff(path)
    assert sniffed.family == "ncu" and not sniffed.readable
    assert "roofreport[ncu-rep]" in sniffed.skip_reason
    assert "ncu --import FILE --csv --page raw" in sniffed.skip_reason
    (outcome,) = _read(path).files
    assert outcome.status == "skipped" and "roofreport[ncu-rep]" in outcome.error


def test_without_the_module_reading_a_report_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)
    result = parse_rep(corpus_path("ncu", "rep", "speedy_scan_profile.ncu-rep"), "ncu-rep binary report")
    assert not result.tables
    assert "roofreport[ncu-rep]" in result.error.message and "ncu --import" in result.error.message


def test_inspect_shows_a_report_read():
    _needs_module()
    path = corpus_path("ncu", "rep", "julia_indexspaces_profile.ncu-rep")
    run = CliRunner().invoke(cli, ["inspect", str(path), "--json"], catch_exceptions=False)
    assert run.exit_code == 0
    (shown,) = json.loads(run.stdout)
    assert (shown["family"], shown["status"], shown["rows"]["kernels"]) == ("ncu", "ok", 2)
    assert shown["tool_version"] == "2022.1.1.0"


# -- spellings and NVTX ----------------------------------------------------------------------

@pytest.mark.parametrize(("unit", "printed"), [
    ("ns", "nsecond"), ("hz", "cycle/second"), ("byte/s", "byte/second"), ("sector/s", "sector/second"),
    ("byte", "byte"), ("inst/cycle", "inst/cycle"), ("%", "%"), ("", "")])
def test_units_are_spelled_as_ncu_prints_base_units(unit, printed):
    assert printed_unit(unit) == printed


@pytest.mark.parametrize(("value", "text"), [
    (336704.0, "336704"), (1500041450.4185846, "1500041450.4185846"), (float("nan"), "nan"),
    (3.00304287882472e+20, "3.00304287882472e+20"), (1e-05, "1e-05"), (-2.5, "-2.5")])
def test_numbers_are_printed_so_they_read_back_exactly(value, text):
    assert number_text(value) == text
    read = pl.select(parse_number(pl.lit(text))).item()
    assert read == value or (read is None and math.isnan(value))  # nan: no value


class _Domain:
    def __init__(self, push_pop, start_end):
        self.push_pop, self.start_end = push_pop, start_end

    def push_pop_ranges(self):
        return self.push_pop

    def start_end_ranges(self):
        return self.start_end


class _Action:
    """An action with the NVTX state's documented interface (INvtxState, INvtxDomainInfo): no
    corpus report recorded NVTX ranges."""

    def __init__(self, domains):
        self.domains_by_id = dict(enumerate(domains))

    def nvtx_state(self):
        return self if self.domains_by_id else None

    def domains(self):
        return tuple(self.domains_by_id)

    def domain_by_id(self, domain_id):
        return self.domains_by_id.get(domain_id)


def test_nvtx_ranges_become_the_region_domain_by_domain():
    action = _Action([_Domain(("train", "step"), ("epoch 1",)), _Domain((), ()), _Domain(("fwd",), ())])
    assert _nvtx_path(action) == "train/step/epoch 1/fwd"
    assert _nvtx_path(_Action([_Domain((), ())])) is None  # the default domain, no range
    assert _nvtx_path(_Action([])) is None


def test_a_report_without_nvtx_ranges_has_no_region():
    data, _ = _report("speedy_scan_profile.ncu-rep")  # NVTX state: the default domain, empty
    assert data["kernels"]["region"].to_list() == [None]
