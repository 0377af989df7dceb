"""The "Jobs on several GPUs" section: per job of several ranks, where each rank's time goes (one
stacked bar per rank: compute, communication no compute hides, memory copies alone, idle), the
overlap of communication with compute, the collectives' bandwidth against the interconnect, and
the straggler; then the runs where one process drove several GPUs (DataParallel), and the
scaling between runs of different GPU counts. Page 1 says each job's three facts
(`job_sentences`).

Every number comes from `analysis.distributed` (`Distributed`: ranks, collectives, stragglers,
jobs, single_process, scaling); this module only orders and words them.
"""

from __future__ import annotations

import polars as pl

from roofreport.model import labels
from roofreport.report import fmt
from roofreport.report.context import Bullets, Column, Heading, Paragraph, Section, chart
from roofreport.report.naming import RunNames
from roofreport.report.tables import cell, table

EMPTY = ("No job on several GPUs: the traces of a distributed job, one per rank (PyTorch's profiler in every "
         "process: `distributedInfo` in each trace, or `rank-N` in the file names), give each rank's time, its "
         "collectives' bandwidth and the straggler.")
# (ranks column, legend label, colour): the four parts that add up to each rank's span
PARTS = [
    ("compute_pct", "compute", "#0072B2"),
    ("exposed_comm_pct", "communication not hidden by compute", "#332288"),
    ("memory_only_pct", "memcpy / memset alone", "#882255"),
    ("idle_pct", "idle", "#DDDDDD"),
]


def distributed_section(an, names: RunNames) -> Section:
    section = Section("distributed", "Jobs on several GPUs")
    found = an.distributed
    if not (found.jobs.height or found.single_process.height or found.scaling.height):
        section.empty = EMPTY
        return section
    if found.jobs.height:
        section.blocks.append(Paragraph.of(
            "A job's ranks are its processes: a trace per rank (files named alike but for the rank, or "
            "numbered files whose GPU work ran at the same time), or the processes of one trace that "
            "followed a launcher's children (nsys, rocprof). Per rank, from its first to its "
            "last GPU activity: compute kernels, communication no compute kernel hides, copies alone and idle "
            "time, as Holistic Trace Analysis splits them (every GPU event counted, the last step too). Overlap "
            "is the share of communication time during which compute ran. Bus bandwidth is nccl-tests': the "
            "message size over the time, times 2(n-1)/n for all-reduce."))
    for job in found.jobs.iter_rows(named=True):
        section.blocks += _job_blocks(job, found, names)
    if found.single_process.height:
        section.blocks += _single_process_blocks(found.single_process, found.ranks, names)
    if found.scaling.height:
        section.blocks += _scaling_blocks(found.scaling, names)
    return section


def job_sentences(job: dict) -> list[str]:
    """The job's straggler, its communication no compute hides and its collectives' bandwidth,
    a short sentence each (page 1 and this section)."""
    out = []
    if job["slowest_rank"] is not None and job["slower_pct"] is not None:
        why = f" ({job['cause']})" if job["cause"] else ""
        partial = job["world_size"] and job["ranks"] < job["world_size"]
        median = (f"the median of the {job['ranks']} ranks the logs hold (of {job['world_size']})" if partial
                  else "the median rank")
        out.append(f"rank {job['slowest_rank']} is {fmt.percent(job['slower_pct'], 0)} slower than {median}{why}")
    what = job["collective"] or "communication"
    if job["exposed_comm_pct"] is not None:
        out.append(f"{fmt.percent(job['exposed_comm_pct'], 0)} of step time is {what} not hidden by compute")
    if job["link_pct"] is not None:
        bound = " at least" if job["busbw_lower_bound"] else ""
        out.append(f"{what} reaches{bound} {fmt.percent(job['link_pct'], 0)} of {job['link']}'s bus bandwidth "
                   f"({fmt.bandwidth(job['busbw_bytes_per_s'])} of {fmt.bandwidth(job['link_bw_bytes_per_s'])} "
                   "per direction)")
    elif job["busbw_bytes_per_s"] is not None:
        out.append(f"{what} moves {fmt.bandwidth(job['busbw_bytes_per_s'])} of bus bandwidth"
                   + (f"; {job['link_note']}" if job["link_note"] else ""))
    return out


def job_title(job: dict, short: bool = False) -> str:
    """The job as a heading names it: its name and, once, its ranks (`traces (2 ranks of 8,
    DDP, A100-SXM4-40GB)`; a job named by its folder and size, `traces (8 ranks)`, is said by
    its folder: the ranks are said here). `short`: the ranks the logs hold alone (a finding's
    lead, whose sentence says the job's size where it differs)."""
    parts = [f"{job['ranks']} ranks" + (f" of {job['world_size']}" if job["world_size"] and not short and
                                          job["world_size"] != job["ranks"] else "")]
    if not short:
        parts += [p for p in (job["parallelism"], job["gpu_label"]) if p]
    name = labels.job_base(job["distributed_job"]) or "Job"
    return f"{name} ({', '.join(parts)})"


def _job_blocks(job: dict, found, names: RunNames) -> list:
    name = job["distributed_job"]
    ranks = found.ranks.filter(pl.col("distributed_job") == name).sort("rank")
    blocks: list = [Heading(job_title(job))]
    said = job_sentences(job)
    if said:
        blocks.append(Paragraph.of("; ".join(s[0].upper() + s[1:] if i == 0 else s for i, s in enumerate(said)) + "."))
    if job["busbw_lower_bound"]:
        blocks.append(Paragraph.of(
            "Not every rank of the job is in the data, so each collective's time includes the time its rank "
            "waited for the others: the bandwidth is a lower bound."))
    if ranks.height:
        rank_labels = [f"rank {r}" for r in ranks["rank"].to_list()]
        shares = {label: row for label, row in zip(rank_labels, ranks.iter_rows(named=True))}
        from roofreport.report.charts.share import stacked_percent_bars

        def draw(chart_id, rows, values):
            parts = [(text, colour, [values[row][column] or 0.0 for row in rows]) for column, text, colour in PARTS]
            return stacked_percent_bars(chart_id, rows, [p for p in parts if any(p[2])],
                                        "Share of the rank's span, first to last GPU activity (%)")

        blocks.append(chart(f"ranks-{_slug(name)}", f"Where each rank's time goes: {labels.job_base(name) or name}",
                            draw, rank_labels, shares))
        blocks.append(_rank_table(ranks))
    calls = found.collectives.filter(pl.col("distributed_job") == name)
    if calls.height:
        blocks.append(_collective_table(calls))
    return blocks


def _rank_table(ranks: pl.DataFrame, per: str = "rank", caption: str | None = None):
    """Each rank's (or, `per="device"`, each GPU's of one process) shares of its span."""
    rows = [[cell(str(r[per])), fmt.duration(r["span_ns"]), fmt.percent(r["compute_pct"]),
             fmt.percent(r["exposed_comm_pct"]), fmt.percent(r["memory_only_pct"]), fmt.percent(r["idle_pct"]),
             fmt.percent(r["comm_overlap_pct"]), fmt.duration(r["step_time_ns"]), fmt.percent(r["step_time_spread_pct"])]
            for r in ranks.iter_rows(named=True)]
    cols = [Column("Rank" if per == "rank" else "GPU", width="8%" if per == "rank" else "16%"),
            Column("Span", numeric=True), Column("Compute", numeric=True),
            Column("Comm. not hidden", numeric=True), Column("Copies alone", numeric=True),
            Column("Idle", numeric=True), Column("Comm. overlap", numeric=True),
            Column("Step (median)", numeric=True), Column("Step spread", numeric=True)]
    return table(cols, rows, caption=caption or "Per rank: shares of its span; overlap: communication time with "
                                                 "compute")


def _collective_table(calls: pl.DataFrame):
    rows = [[cell(str(r["rank"])), cell(r["collective"]), fmt.nbytes(r["message_bytes"]), fmt.count(r["count"]),
             fmt.duration(r["mean_ns"]), fmt.bandwidth(r["algbw_bytes_per_s"]), fmt.bandwidth(r["busbw_bytes_per_s"]),
             fmt.duration(r["wait_ns"]), fmt.bandwidth(r["transfer_busbw_bytes_per_s"])]
            for r in calls.sort("rank", "collective").iter_rows(named=True)]
    cols = [Column("Rank", width="7%"), Column("Collective"), Column("Message", numeric=True),
            Column("Calls", numeric=True), Column("Mean time", numeric=True), Column("Alg. BW", numeric=True),
            Column("Bus BW", numeric=True), Column("Waiting", numeric=True), Column("Bus BW of transfer", numeric=True)]
    return table(cols, rows, caption="Collectives per rank (bandwidth of kernel time: a lower bound while the rank "
                                     "waits; of transfer: the least time any rank spent in each call)")


def _single_process_blocks(frame: pl.DataFrame, ranks: pl.DataFrame, names: RunNames) -> list:
    blocks: list = [Heading("One process, several GPUs (DataParallel)")]
    told = frame.filter(pl.col("per_device"))
    untold = frame.filter(~pl.col("per_device"))
    blocks.append(Paragraph.of(
        f"{frame.height} run{'s drive' if frame.height != 1 else ' drives'} several GPUs from one process, "
        "as PyTorch's DataParallel does: the weights are broadcast from GPU 0 and the gradients reduced to it "
        "every step, and "
        "GPU 0 computes the loss, so it does more than the others."))
    items = [Paragraph.of(f"{names.label(r['run'])}: GPU 0's kernels take {fmt.percent(r['gpu0_excess_pct'], 0)} "
                          f"more time than the median other GPU's")
             for r in told.iter_rows(named=True) if r["gpu0_excess_pct"] is not None]
    if items:
        blocks.append(Bullets(items))
    # where a trace gives each GPU's timeline (the ranks frame's rows per device): each GPU's shares
    for run in told["run"].to_list():
        gpus = ranks.filter((pl.col("run") == run) & pl.col("device").is_not_null()).sort("device")
        if gpus.height:
            blocks.append(_rank_table(gpus, "device", f"Per GPU of {names.label(run)}: shares of its span, "
                                                      "first to last GPU activity; overlap: communication time "
                                                      "with compute"))
    if untold.height:
        gpus = sorted({g for g in untold["gpus"].to_list() if g})
        over = f" over {fmt.listing([str(g) for g in gpus])} GPUs" if gpus else ""
        blocks.append(Paragraph.of(
            f"{untold.height} of them: cannot tell per device. Their summaries add every GPU's kernels together"
            f"{over}, so GPU 0's extra work and each GPU's time are not in the logs; "
            f"{untold['would_tell'][0]} would tell.", level="warning"))
    return blocks


def _scaling_blocks(frame: pl.DataFrame, names: RunNames) -> list:
    """A table of the pairs with an efficiency; the pairs without one in a sentence (their first
    note says why: a summary of several GPUs, unknown batches)."""
    told = frame.filter(pl.col("efficiency_pct").is_not_null())
    untold = frame.filter(pl.col("efficiency_pct").is_null())
    blocks: list = [Heading("Scaling with the GPU count")]
    if told.height:
        rows = [[cell(names.label(r["run_a"])), cell(names.label(r["run_b"])), f"{r['gpus_a']} → {r['gpus_b']}",
                 cell(r["scaling"]), fmt.ratio(r["speedup"]), fmt.percent(r["efficiency_pct"], 0)]
                for r in told.iter_rows(named=True)]
        cols = [Column("Fewer GPUs", width="30%"), Column("More GPUs", width="30%"), Column("GPUs"),
                Column("Scaling"), Column("Speedup", numeric=True), Column("Efficiency", numeric=True)]
        blocks += [Paragraph.of("Strong scaling keeps the global batch (ideal: the step time falls with the GPU "
                                "count); weak scaling keeps the batch per GPU (ideal: the step time stays). "
                                "DataParallel's batch size is the global batch; a distributed job's is each rank's."),
                   table(cols, rows, caption="The same work on different GPU counts")]
    if untold.height:
        counts = sorted({f"{a} and {b}" for a, b in untold.select("gpus_a", "gpus_b").iter_rows()})
        blocks.append(Paragraph.of(
            f"{untold.height} pair{'s' if untold.height != 1 else ''} of runs of the same work on "
            f"{fmt.listing(counts)} GPUs give no scaling efficiency: {untold['note'][0]}."))
    return blocks


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower()[:60]
