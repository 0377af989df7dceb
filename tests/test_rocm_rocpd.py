"""rocprofv3's rocpd SQLite database (`<pid>_results.db`, ROCm 7's default output; issue #34):
`sample_logs/amd/mi300x/rocm7/llama3-8b/61204_results.db` is written by
`benchmarks/samples/rocm_rocpd.py` with rocprofiler-sdk's rocpd schema (uuid-suffixed tables,
the views over them, the data views `kernels`, `memory_copies`, `regions`, `kernel_pmc_events`).
Every row the views hold is read, counted here with Python's sqlite3, never by the reader."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.families.rocm import rocpd
from roofreport.pipeline.sniff import sniff
from tests.conftest import SAMPLE_LOGS

DB = SAMPLE_LOGS / "amd" / "mi300x" / "rocm7" / "llama3-8b" / "61204_results.db"
RUN = "amd/mi300x/rocm7/llama3-8b"


def _count(sql: str, path: Path = DB) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def data():
    return roofreport.read(DB.parent, jobs=1)


def test_a_rocpd_database_is_sniffed_as_rocm_with_its_counters():
    found = sniff(DB)
    assert (found.family, found.variant) == ("rocm", "rocprofv3 rocpd database (counters)")


def test_every_row_of_its_views_is_read(data):
    (file,) = [f for f in data.files if f.path.endswith("_results.db")]
    assert file.status == "ok" and not file.warnings
    [(kernels,)] = _count("SELECT count(*) FROM kernels")
    [(copies,)] = _count("SELECT count(*) FROM memory_copies")
    [(calls,)] = _count("SELECT count(*) FROM regions WHERE category NOT LIKE 'MARKER%'")
    [(ranges,)] = _count("SELECT count(*) FROM regions WHERE category LIKE 'MARKER%'")
    [(values,)] = _count("SELECT count(*) FROM kernel_pmc_events")
    assert file.rows == {"kernels": kernels, "activities": copies, "api_calls": calls, "regions": ranges,
                         "metrics": values + 5 * kernels}   # + each dispatch's LDS, scratch and registers
    assert (kernels, copies, calls, ranges) == (22, 2, 24, 2)


def test_kernels_copies_calls_and_ranges_keep_their_times_and_sizes(data):
    kernels = data.kernels.filter(pl.col("run") == RUN).sort("launch_id")
    [(total,)] = _count("SELECT sum(duration) FROM kernels")
    assert kernels["duration_ns"].sum() == total
    first = _count("SELECT name, grid_x / workgroup_x, workgroup_x, agent_logical_index FROM kernels "
                   "ORDER BY start LIMIT 1")[0]
    assert (kernels["name"][0], kernels["grid"][0], kernels["block"][0], kernels["device"][0]) == (
        first[0], f"({first[1]}, 1, 1)", f"({first[2]}, 1, 1)", str(first[3]))
    copies = data.activities.filter((pl.col("run") == RUN) & (pl.col("kind") == "memcpy"))
    assert sorted(copies["bytes"].to_list()) == sorted(s for (s,) in _count("SELECT size FROM memory_copies"))
    assert set(copies["name"]) == {"MEMORY_COPY_HOST_TO_DEVICE"}
    ranges = data.tables["regions"].filter(pl.col("run") == RUN)
    assert ranges["name"].to_list() == ["step 0", "step 1"] and set(ranges["kind"]) == {"nvtx"}
    calls = data.tables["api_calls"].filter(pl.col("run") == RUN)
    assert calls.filter(pl.col("name") == "hipExtModuleLaunchKernel").height == 8


def test_the_agents_name_the_gpu_and_the_counters_give_the_roofline(data):
    run = data.runs.filter(pl.col("run") == RUN).row(0, named=True)
    assert run["gpu_model"] == "Instinct MI300X" and run["time_source"] == "rocprof counter collection"
    rows = _count("SELECT pmc_name, sum(pmc_value) FROM kernel_pmc_events GROUP BY pmc_name")
    sums = dict(rows)
    valu = 64 * sum(w * sums[f"SQ_INSTS_VALU_{op}_F32"] for op, w in (("ADD", 1), ("MUL", 1), ("TRANS", 1), ("FMA", 2)))
    assert run["flops"] == pytest.approx(valu + 512 * sums["SQ_INSTS_VALU_MFMA_MOPS_BF16"], rel=1e-9)
    assert run["dram_bytes"] == pytest.approx(1024 * (sums["FETCH_SIZE"] + sums["WRITE_SIZE"]), rel=1e-9)
    assert run["bound"] == "compute" and 0 < run["pct_of_roof"] < 100


def rocm_rocpd_uuid() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        from samples import rocm_rocpd
    finally:
        sys.path.pop(0)
    return rocm_rocpd.UUID


def test_a_database_without_counters_is_a_trace_and_one_without_views_an_error(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        from samples import rocm_rocpd
    finally:
        sys.path.pop(0)
    plain = tmp_path / "trace" / "1_results.db"
    plain.parent.mkdir()
    plain.write_bytes(DB.read_bytes())
    con = sqlite3.connect(plain)
    con.execute(f"DELETE FROM rocpd_pmc_event{rocm_rocpd.UUID}")
    con.commit()
    con.close()
    assert sniff(plain).variant == "rocprofv3 rocpd database"
    result = rocpd.parse(plain, "rocprofv3 rocpd database")
    assert result.error is None and result.rows()["kernels"] == 22
    assert result.tables["activities"].filter(pl.col("kind") == "kernel").height == 22   # a timeline
    broken = tmp_path / "broken" / "2_results.db"
    broken.parent.mkdir()
    broken.write_bytes(DB.read_bytes())
    con = sqlite3.connect(broken)
    con.execute("DROP VIEW kernel_pmc_events")
    con.execute("DROP VIEW kernels")
    con.commit()
    con.close()
    result = rocpd.parse(broken, "rocprofv3 rocpd database (counters)")
    assert result.error is not None and "no kernels view" in result.error.describe()
    assert result.rows()["api_calls"] == 24          # what it holds is still read


def test_the_released_rocpd_packages_column_names_are_read_alike(tmp_path):
    """The `rocpd` package of ROCm 7 (its `csv.py`) reads `kernels` as `agent_log_index`,
    `agent_abs_index`, `vgpr_count`, `stack_id`, `memory_copies` as `dst_agent_log_index`, and the
    counters from a `counters_collection` view (`dispatch_id`, `counter_name`, `value`): the same
    database under those names reads the same."""
    released = tmp_path / "released" / "61204_results.db"
    released.parent.mkdir()
    released.write_bytes(DB.read_bytes())
    con = sqlite3.connect(released)
    kernel_sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'kernels'").fetchone()[0]
    copy_sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_copies'").fetchone()[0]
    con.executescript(
        "CREATE TABLE counted AS SELECT dispatch_id, pid, pmc_name AS counter_name, pmc_value AS value FROM kernel_pmc_events;"
        "DROP VIEW kernel_pmc_events; DROP VIEW kernels; DROP VIEW memory_copies;"
        + kernel_sql.replace("`kernels`", "`kernels_sdk`", 1) + ";"
        + copy_sql.replace("`memory_copies`", "`copies_sdk`", 1) + ";"
        "CREATE VIEW kernels AS SELECT id, name, dispatch_id, pid, tid, queue_id, stream_id, kernel_id, start, \"end\", "
        "duration, agent_logical_index AS agent_log_index, agent_absolute_index AS agent_abs_index, "
        "correlation_id AS stack_id, grid_x, grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z, lds_size, "
        "scratch_size, arch_vgpr_count AS vgpr_count, accum_vgpr_count, sgpr_count FROM kernels_sdk;"
        "CREATE VIEW memory_copies AS SELECT id, name, start, \"end\", duration, size, stream_id, "
        "dst_agent_logical_index AS dst_agent_log_index, correlation_id AS stack_id FROM copies_sdk;"
        "CREATE VIEW counters_collection AS SELECT * FROM counted;")
    con.commit()
    con.close()
    con = sqlite3.connect(released)
    uuid = rocm_rocpd_uuid()
    markers = con.execute("SELECT id, event_id, name FROM regions WHERE category LIKE 'MARKER%' ORDER BY id").fetchall()
    generic = con.execute("SELECT id FROM rocpd_string WHERE string = 'hipMemcpyAsync'").fetchone()[0]
    for region_id, event_id, name in markers:   # the range's text kept in its event's extdata, its name generic
        con.execute(f"UPDATE rocpd_event{uuid} SET extdata = json_object('message', ?) WHERE id = ?", (name, event_id))
        con.execute(f"UPDATE rocpd_region{uuid} SET name_id = ? WHERE id = ?", (generic, region_id))
    con.commit()
    con.close()
    ours = rocpd.parse(DB, "rocprofv3 rocpd database (counters)")
    theirs = rocpd.parse(released, "rocprofv3 rocpd database (counters)")
    assert theirs.error is None and theirs.rows() == ours.rows()
    assert theirs.tables["regions"]["name"].to_list() == ["step 0", "step 1"]
    for table in ("kernels", "metrics", "activities", "regions", "api_calls"):
        assert theirs.tables[table].equals(ours.tables[table]), table


def test_an_agent_of_unknown_product_is_named_by_its_target_and_compute_units(tmp_path):
    """As the corpus's gfx950 agent_info shows (`Product_Name` unknown, 256 CUs): the GPU is the
    gfx target with the agent's compute units (`extdata.cu_count`, where rocpd keeps them)."""
    path = tmp_path / "mi355" / "9_results.db"
    path.parent.mkdir()
    path.write_bytes(DB.read_bytes())
    con = sqlite3.connect(path)
    con.execute(f"UPDATE rocpd_info_agent{rocm_rocpd_uuid()} SET product_name = 'unknown', name = 'gfx950', "
                "extdata = json_object('cu_count', 256, 'max_engine_clk_fcompute', 2400) WHERE type = 'GPU'")
    con.commit()
    con.close()
    hints = rocpd.parse(path, "rocprofv3 rocpd database (counters)").hints
    assert (hints.device_name, hints.compute_capability, hints.sm_count) == ("gfx950", "gfx950", 256)
    run = roofreport.read(path.parent, jobs=1).runs.row(0, named=True)
    # MI350X and MI355X both have 256 CUs: the family, not one GPU (the clock would tell them apart)
    assert (run["gpu_family"], run["gpu"], run["gpu_model"]) == ("cdna4", "CC gfx950, 256 SMs", None)


def test_the_weight_uploads_before_the_first_kernel_are_setup(data):
    """The database lists its copies among its (counted) dispatches by start time: the two
    uploads before the first kernel are the run's set-up, out of the steady-state shares."""
    run = data.runs.filter(pl.col("run") == RUN).row(0, named=True)
    [(uploads,)] = _count("SELECT sum(duration) FROM memory_copies WHERE start < (SELECT min(start) FROM kernels)")
    assert uploads > 0 and run["setup_time_ns"] == pytest.approx(uploads)
    shares = roofreport.analyze(data).share.filter(pl.col("run") == RUN)
    assert "memcpy" not in shares["category"].to_list()
