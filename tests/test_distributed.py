"""Jobs on several GPUs (issue 36): the job summary, page 1's sentences, the interconnect peaks,
the parallelism a run's collectives show, DataParallel's single process, and scaling."""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport import gpu
from roofreport.analysis import distributed
from roofreport.model import parallel
from roofreport.report.assemble import assemble
from tests.conftest import SAMPLE_LOGS, corpus_path

JOB = "ddp_4rank/resnet50_rank-*.pt.trace.json"


@pytest.fixture(scope="module")
def ddp():
    return roofreport.analyze(roofreport.read(SAMPLE_LOGS / "ddp_4rank", jobs=1))


def _text(paragraph) -> str:
    return "".join(span.text for span in paragraph.spans)


def test_a_job_of_four_ranks_is_one_job_with_its_ranks_and_parallelism(ddp):
    runs = ddp.tables["runs"].sort("rank")
    assert runs["ranks"].to_list() == [4, 4, 4, 4]
    assert set(runs["parallelism"].to_list()) == {parallel.DATA_PARALLEL}
    assert ddp.distributed.ranks.filter(pl.col("distributed_job") == JOB)["rank"].to_list() == [0, 1, 2, 3]
    job = ddp.distributed.jobs.row(0, named=True)
    assert ddp.distributed.jobs.height == 1
    assert (job["distributed_job"], job["ranks"], job["world_size"], job["parallelism"], job["gpu_label"]) == \
        (JOB, 4, 4, parallel.DATA_PARALLEL, "A100-SXM4-80GB")


def test_the_job_figures_follow_from_the_rank_and_collective_frames(ddp):
    job = ddp.distributed.jobs.row(0, named=True)
    ranks = ddp.distributed.ranks
    # the straggler: rank 3, by its own compute (the others wait in the all-reduce for it)
    assert (job["slowest_rank"], job["cause"]) == (3, "more compute")
    overall = ddp.distributed.stragglers.filter(pl.col("step").is_null()).row(0, named=True)
    assert job["slower_pct"] == pytest.approx(overall["slowest_ns"] / overall["median_ns"] * 100 - 100)
    # communication no compute hides: the median rank's share of its span
    shares = (100 * ranks["exposed_comm_ns"] / ranks["span_ns"]).sort().to_list()
    assert job["exposed_comm_pct"] == pytest.approx((shares[1] + shares[2]) / 2)
    # the four parts partition each rank's span
    parts = ranks.select(pl.sum_horizontal("compute_pct", "exposed_comm_pct", "memory_only_pct", "idle_pct"))
    assert parts.to_series().to_list() == pytest.approx([100.0] * 4)
    # bus bandwidth of the transfer: 25,557,032 floats all-reduced among 4 in the 0.8 ms the
    # last rank to arrive spent (nccl-tests: x 2(n-1)/n), against NVLink's 300 GB/s per direction
    expected = 25_557_032 * 4 * 2 * 3 / 4 / 0.8e-3
    assert (job["collective"], job["busbw_lower_bound"], job["link"]) == ("all-reduce", False, "NVLink")
    assert job["busbw_bytes_per_s"] == pytest.approx(expected)
    assert job["link_pct"] == pytest.approx(100 * expected / 300e9)


def test_page_one_says_the_straggler_the_hidden_communication_and_the_bandwidth(ddp):
    job = ddp.distributed.jobs.row(0, named=True)
    texts = [_text(p) for p in assemble(ddp).findings]
    said = next(t for t in texts if t.startswith(JOB))
    assert f"rank 3 is {job['slower_pct']:.0f} % slower than the median rank (more compute)" in said
    assert f"{job['exposed_comm_pct']:.0f} % of step time is all-reduce not hidden by compute" in said
    assert f"all-reduce reaches {job['link_pct']:.0f} % of NVLink's bus bandwidth" in said
    # the sample's own numbers, so a change of any of them is seen
    assert "rank 3 is 28 % slower" in said and "19 % of step time" in said and "reaches 64 %" in said


def test_the_report_has_a_section_per_job_with_bars_per_rank_and_its_collectives(ddp):
    report = assemble(ddp)
    section = next(s for s in report.sections if s.id == "distributed")
    kinds = [type(b).__name__ for b in section.blocks]
    assert kinds.count("Chart") == 1 and kinds.count("Table") == 2
    heading = next(b for b in section.blocks if type(b).__name__ == "Heading")
    assert heading.text == f"{JOB} (4 ranks, data-parallel, A100-SXM4-80GB)"
    ranks_table = next(b for b in section.blocks if type(b).__name__ == "Table")
    assert [row[0].text for row in ranks_table.rows] == ["0", "1", "2", "3"]


def test_a_folder_without_jobs_has_no_section_and_says_which_log_would_fill_it():
    an = roofreport.analyze(roofreport.read(SAMPLE_LOGS / "v100", jobs=1))
    section = next(s for s in assemble(an).sections if s.id == "distributed") \
        if any(s.id == "distributed" for s in assemble(an).sections) else None
    assert an.distributed.jobs.height == 0
    assert section is None   # left out of the body; the overview names the gap
    assert not any(_text(p).startswith("rank ") for p in assemble(an).findings)


@pytest.mark.parametrize("key, link, per_direction", [
    ("A100 SXM4 80GB", "NVLink", 300e9), ("A100 SXM4 40GB", "NVLink", 300e9), ("H100 SXM5 80GB", "NVLink", 450e9),
    ("Tesla V100 SXM2 16GB", "NVLink", 150e9), ("Tesla K80 (per GK210 GPU)", "PCIe 3.0 x16", 15.76e9),
    ("A100 PCIe 40GB", "PCIe 4.0 x16", 31.504e9), ("H100 PCIe", "PCIe 5.0 x16", 63.008e9),
    ("GeForce RTX 4060", "PCIe 4.0 x8", 15.752e9),
])
def test_the_gpu_table_gives_each_gpus_link_per_direction(key, link, per_direction):
    spec = gpu.load_database().get(key)
    assert spec.interconnect() == (link, pytest.approx(per_direction))
    assert spec.link_source   # every link value says where it comes from


def test_every_link_in_the_table_has_its_source():
    for spec in gpu.load_database().specs:
        if spec.nvlink_bw or spec.pcie_gen:
            assert spec.link_source, spec.key
            assert spec.pcie_gen is None or spec.pcie_gen in range(1, 7)


@pytest.mark.parametrize("kinds, expected", [
    ({"all-reduce"}, parallel.DATA_PARALLEL), ({"all-gather", "reduce-scatter"}, parallel.SHARDED),
    ({"broadcast", "reduce"}, parallel.SINGLE_PROCESS), ({"reduce"}, parallel.SINGLE_PROCESS),
    ({"send/recv"}, parallel.PIPELINE), (set(), None),
])
def test_the_collectives_say_the_parallelism(kinds, expected):
    assert parallel.from_kinds(kinds) == expected


def test_dataparallels_summed_nvprof_summary_cannot_tell_per_device():
    log = corpus_path("course", "pramitmallick-examples", "imagenet", "final", "out.alexnet_16_0.01_k80_full.756013")
    an = roofreport.analyze(roofreport.read(log, jobs=1))
    assert an.reasons["parallelism"].to_list() == [parallel.SINGLE_PROCESS]
    row = an.distributed.single_process.row(0, named=True)
    assert row["per_device"] is False and "--print-summary-per-gpu" in row["would_tell"]
    texts = [_text(p) for p in assemble(an).findings]
    said = next(t for t in texts if "DataParallel" in t)
    assert "GPU 0" in said and "cannot tell per device" in said and "nvprof --print-summary-per-gpu" in said


def _runs(*rows):
    keys = ("run", "model", "gpu_label", "batch_size", "rank", "ranks", "distributed_job", "time_per_iteration_ns")
    return pl.DataFrame([dict(zip(keys, row)) for row in rows],
                        schema={"run": pl.String, "model": pl.String, "gpu_label": pl.String, "batch_size": pl.Int64,
                                "rank": pl.Int64, "ranks": pl.Int64, "distributed_job": pl.String,
                                "time_per_iteration_ns": pl.Float64})


def _reasons(*rows):
    return pl.DataFrame(list(rows), schema={"run": pl.String, "gpus": pl.Int64}, orient="row")


def test_scaling_is_strong_with_the_same_global_batch_and_weak_with_the_same_batch_per_gpu():
    runs = _runs(("one", "m", "A100", 64, None, None, None, 100.0),
                 ("r0", "m", "A100", 16, 0, 4, "job", 40.0), ("r1", "m", "A100", 16, 1, 4, "job", 40.0),
                 ("w0", "n", "A100", 64, 0, 2, "big", 110.0), ("w1", "n", "A100", 64, 1, 2, "big", 110.0),
                 ("solo", "n", "A100", 64, None, None, None, 100.0))
    out = distributed.scaling(runs, _reasons(("one", 1), ("solo", 1)), pl.DataFrame())
    strong = out.filter(pl.col("model") == "m").row(0, named=True)
    # a distributed job's batch is per rank: 4 x 16 = 64, the single GPU's 64: strong scaling
    assert (strong["scaling"], strong["gpus_a"], strong["gpus_b"]) == ("strong", 1, 4)
    assert strong["speedup"] == pytest.approx(2.5) and strong["efficiency_pct"] == pytest.approx(62.5)
    weak = out.filter(pl.col("model") == "n").row(0, named=True)
    assert weak["scaling"] == "weak" and weak["efficiency_pct"] == pytest.approx(100 / 1.1)


def test_dataparallels_batch_is_the_global_batch_and_a_summed_summary_gives_no_efficiency():
    runs = _runs(("one", "m", "K80", 16, None, None, None, 10.0), ("dp", "m", "K80", 16, None, None, None, 30.0))
    out = distributed.scaling(runs, _reasons(("one", 1), ("dp", 4)), pl.DataFrame())
    row = out.row(0, named=True)
    assert (row["gpus_a"], row["gpus_b"], row["efficiency_pct"]) == (1, 4, None)
    assert "cannot tell per device" in row["note"]
    with_steps = pl.DataFrame({"run": ["one", "dp"], "step_ns": [10.0, 5.0]})
    row = distributed.scaling(runs, _reasons(("one", 1), ("dp", 4)), with_steps).row(0, named=True)
    assert (row["scaling"], row["global_batch_a"], row["global_batch_b"]) == ("strong", 16, 16)
    assert row["efficiency_pct"] == pytest.approx(50.0)


def test_summary_compare_and_the_json_summary_carry_the_ranks(ddp):
    from roofreport.report.summary_json import summary as json_summary

    data = roofreport.read(SAMPLE_LOGS / "ddp_4rank", jobs=1)
    runs = roofreport.api.summary(data).runs.sort("rank")
    assert runs["rank"].to_list() == [0, 1, 2, 3] and set(runs["parallelism"]) == {parallel.DATA_PARALLEL}
    pairs = roofreport.api.compare(data, data).pairs
    assert pairs.height == 4   # rank N of A with rank N of B, not "4 runs of each have this workload"
    assert all(a == b for a, b in pairs.select("run_a", "run_b").iter_rows())
    out = json_summary(ddp, assemble(ddp))
    job = ddp.distributed.jobs.row(0, named=True)
    assert [j["slowest_rank"] for j in out["jobs"]] == [3]
    assert out["jobs"][0]["link_pct"] == pytest.approx(job["link_pct"])
    assert sorted(r["rank"] for r in out["ranks"]) == [0, 1, 2, 3]
    assert {r["rank"] for r in out["runs"]} == {0, 1, 2, 3} and {r["ranks"] for r in out["runs"]} == {4}


def test_the_model_of_a_read_holds_the_ranks_and_a_dataset_folder_keeps_them(tmp_path):
    data = roofreport.read(SAMPLE_LOGS / "ddp_4rank", jobs=1)
    kept = data.model.ranks
    assert kept.sort("rank")["rank"].to_list() == [0, 1, 2, 3]
    assert roofreport.analyze(data).distributed.ranks.equals(kept)   # the analysis reads the model's
    folder = tmp_path / "ds"
    stored = roofreport.read(SAMPLE_LOGS / "ddp_4rank", dataset=folder, jobs=1)
    again = roofreport.read(folder)
    for frame in (stored.model.ranks, roofreport.analyze(again).distributed.ranks):
        assert frame.sort("rank").select("rank", "span_ns", "comm_overlap_pct").equals(
            kept.sort("rank").select("rank", "span_ns", "comm_overlap_pct"))
    assert set(again.tables["runs"]["ranks"].to_list()) == {4}
    assert set(again.tables["runs"]["parallelism"].to_list()) == {parallel.DATA_PARALLEL}


def test_an_update_reads_again_only_the_rank_whose_trace_changed(tmp_path):
    import shutil

    logs = tmp_path / "job"
    shutil.copytree(SAMPLE_LOGS / "ddp_4rank", logs)
    folder = tmp_path / "ds"
    roofreport.read(logs, dataset=folder, jobs=1)
    changed = logs / "resnet50_rank-2.pt.trace.json"
    text = changed.read_text()
    assert '"dur": 10428.5' in text          # rank 2's first all-reduce, made longer
    changed.write_text(text.replace('"dur": 10428.5', '"dur": 11428.5'))
    report = roofreport.read(logs, dataset=folder, jobs=1).update_report
    assert (report.changed, report.read, report.unchanged) == (1, 1, 3)
    ranks = roofreport.read(folder).model.ranks.sort("rank")
    fresh = roofreport.read(logs, jobs=1).model.ranks.sort("rank")
    assert ranks.select("rank", "comm_ns", "span_ns").equals(fresh.select("rank", "comm_ns", "span_ns"))


def test_an_all_reduce_in_groups_smaller_than_the_job_reads_as_tensor_parallel(tmp_path):
    import shutil

    logs = tmp_path / "tp"
    shutil.copytree(SAMPLE_LOGS / "ddp_4rank", logs)
    for trace in logs.iterdir():   # the same job, its all-reduce among 2 of its 4 ranks
        text = trace.read_text()
        assert '"Group size": 4' in text
        trace.write_text(text.replace('"Group size": 4', '"Group size": 2'))
    runs = roofreport.read(logs, jobs=1).tables["runs"]
    assert set(runs["parallelism"].to_list()) == {parallel.TENSOR}


def test_two_sampled_ranks_of_a_large_job_say_how_few_ranks_the_median_is_of():
    an = roofreport.analyze(roofreport.read(corpus_path("kineto", "hta-trace_filter"), jobs=1))
    job = an.distributed.jobs.row(0, named=True)
    assert (job["ranks"], job["world_size"], job["parallelism"]) == (2, 128, parallel.PIPELINE)
    said = next(_text(p) for p in assemble(an).findings if _text(p).startswith(job["distributed_job"]))
    assert "than the median of the 2 ranks the logs hold (of 128)" in said
    assert job["link_pct"] is None and "no message sizes" in job["link_note"]


def test_a_job_named_by_its_folder_says_its_ranks_once(tmp_path):
    """The corpus's two sampled ranks under tensorboard_trace_handler's own names
    (`{host}_{pid}.{stamp}.pt.trace.json.gz`: no rank in them), so the job is named by its folder
    and size, `trace_filter (128 ranks)`: the section's heading read "trace_filter (128 ranks)
    (2 ranks of 128, ...)" and page 1 "trace_filter (128 ranks) (2 ranks): ...". The ranks are said
    once, by the heading."""
    from roofreport.report.context import Chart, Heading

    folder = tmp_path / "trace_filter"
    folder.mkdir()
    for rank, name in enumerate(("node1_4242.1700000000001", "node2_4343.1700000000002")):
        (folder / f"{name}.pt.trace.json.gz").symlink_to(
            corpus_path("kineto", "hta-trace_filter", f"sampled_rank-{rank}.json.gz"))
    an = roofreport.analyze(roofreport.read(tmp_path, jobs=1))
    (job,) = an.distributed.jobs.iter_rows(named=True)
    assert job["distributed_job"] == "trace_filter (128 ranks)" and (job["ranks"], job["world_size"]) == (2, 128)
    report = assemble(an)
    section = next(s for s in report.sections if s.id == "distributed")
    (heading,) = [b.text for b in section.blocks if isinstance(b, Heading)]
    assert heading == "trace_filter (2 ranks of 128, pipeline, GPU not named (Ampere-class kernels))"
    titles = [b.caption for b in section.blocks if isinstance(b, Chart)]
    assert titles == ["Where each rank's time goes: trace_filter"]
    (said,) = [_text(p) for p in report.findings if _text(p).startswith("trace_filter")]
    assert said.startswith("trace_filter (2 ranks): rank 1 is") and said.count("ranks)") == 1
    for text in [heading, *titles, said]:
        assert "ranks) (" not in text and text.count("128 ranks") == 0


def test_a_dataparallel_trace_with_a_device_per_kernel_sets_gpu_0_against_the_others():
    rows = pl.DataFrame({"run": ["dp"] * 5, "device": ["0", "1", "2", "3", "0"],
                         "category": ["conv", "conv", "conv", "conv", "communication"],
                         "time_ns": [100.0, 80.0, 80.0, 90.0, 20.0]})
    reasons = pl.DataFrame({"run": ["dp"], "gpus": [4], "parallelism": [parallel.SINGLE_PROCESS]})
    row = distributed.single_process(pl.DataFrame({"run": ["dp"]}), reasons, rows).row(0, named=True)
    # GPU 0: 120 ns (its share and the reduction), the median other GPU 80 ns: 50 % more
    assert (row["per_device"], row["gpus"], row["gpu0_time_ns"], row["others_median_ns"]) == (True, 4, 120.0, 80.0)
    assert row["gpu0_excess_pct"] == pytest.approx(50.0) and row["would_tell"] is None


def test_two_jobs_of_2_and_4_ranks_with_the_same_batch_per_rank_scale_weakly(tmp_path):
    folder = tmp_path / "jobs"
    folder.mkdir()
    for rank in range(4):
        source = (SAMPLE_LOGS / "ddp_4rank" / f"resnet50_rank-{rank}.pt.trace.json").read_text()
        (folder / f"resnet50_bs32_4gpu_rank-{rank}.pt.trace.json").write_text(source)
        if rank < 2:   # the same job on 2 ranks: its world, its process group, its all-reduce's group
            two = source.replace('"world_size": 4', '"world_size": 2').replace(
                '"pg_size": 4, "ranks": [0, 1, 2, 3]', '"pg_size": 2, "ranks": [0, 1]').replace(
                '"Group size": 4', '"Group size": 2')
            assert two.count('"world_size": 2') == 1 and '"Group size": 2' in two
            (folder / f"resnet50_bs32_2gpu_rank-{rank}.pt.trace.json").write_text(two)
    an = roofreport.analyze(roofreport.read(folder, jobs=1))
    assert sorted(an.distributed.jobs["ranks"].to_list()) == [2, 4]
    row = an.distributed.scaling.row(0, named=True)
    # a distributed job's batch is per rank: 2 x 32 -> 4 x 32, the same work per GPU
    assert (row["gpus_a"], row["gpus_b"], row["global_batch_a"], row["global_batch_b"]) == (2, 4, 64, 128)
    assert row["scaling"] == "weak"
    assert row["efficiency_pct"] == pytest.approx(100 * row["step_ns_a"] / row["step_ns_b"])
    section = next(s for s in assemble(an).sections if s.id == "distributed")
    headings = [b.text for b in section.blocks if type(b).__name__ == "Heading"]
    assert "Scaling with the GPU count" in headings


def test_compare_pairs_the_ranks_two_jobs_share_and_says_which_the_smaller_lacks(tmp_path):
    folder = tmp_path / "ddp_2rank"
    folder.mkdir()
    for rank in range(2):
        source = (SAMPLE_LOGS / "ddp_4rank" / f"resnet50_rank-{rank}.pt.trace.json").read_text()
        (folder / f"resnet50_rank-{rank}.pt.trace.json").write_text(source.replace('"world_size": 4', '"world_size": 2'))
    four = roofreport.read(SAMPLE_LOGS / "ddp_4rank", jobs=1)
    two = roofreport.read(folder, jobs=1)
    result = roofreport.api.compare(four, two)
    assert sorted(result.pairs.select("run_a", "run_b").rows()) == [
        ("ddp_4rank/resnet50_rank-0.pt.trace.json", "resnet50_rank-0.pt.trace.json"),
        ("ddp_4rank/resnet50_rank-1.pt.trace.json", "resnet50_rank-1.pt.trace.json")]
    reasons = sorted(result.unpaired["reason"].to_list())
    assert len(reasons) == 2 and reasons[0].endswith("the job of B has no rank 2") and \
        reasons[1].endswith("the job of B has no rank 3")
