"""Campaign benchmark: many small files, incremental updates, Dask (benchmarks/README.md).

    python benchmarks/bench_campaign.py                 # what `make bench` runs after bench_ingest
    python benchmarks/bench_campaign.py --weeks 4 --scaling 2,4,8,17 --no-dask

Builds a synthetic campaign in a temporary folder (never in the project): the corpus course
folders (`../shared/corpus/course`, 590 files) copied into N weekly folders. Every measured
`roofreport` runs in its own process (start-up and writing included) and reports wall time,
CPU time (its own and its workers', so a loaded machine shows as CPU/wall < cores) and peak
RSS (the process's own high-water mark, and the largest worker's). Prints:

* files per second on each course folder (`parse FOLDER -o DIR`), and where a small file's time
  goes (one course folder read in this process, CPU time per stage);
* on the campaign (best of `--repeat` runs): a full `parse` and its peak memory; the first `parse --update` (which
  writes the partitioned dataset); an `--update` with nothing changed; an `--update` after 1 %
  of the files changed (half cut short, half with a line appended) and one was deleted, as a
  share of the full parse (goal <= 10 %), its tables checked equal to a fresh `parse` of the
  changed logs; `--executor dask` on a local cluster, its tables checked equal to the local
  run's;
* the scaling of the full parse and of the 1 % update from about 1k to 10k files;
* with `--memory 16,85`: the peak RSS of `parse CAMPAIGN -o DIR` (which reads through a spooled
  dataset folder, as the first `--update` does) on campaigns of that many weeks (16 weeks: 9.4k files; 85 weeks:
  50k files), against the goal of 1 GB whatever the campaign's size (issue #30). Run it with
  `nice`: a 50k-file campaign takes a quarter of an hour on two cores.

The machine's load average is printed with every measurement: timings on a shared machine
are noisy, and CPU time shows how much of it the run got.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import polars as pl  # noqa: E402
from bench_ingest import ROOFREPORT, run_measured  # noqa: E402  (the same harness and peak wrapper)
from polars.testing import assert_frame_equal  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT.parent / "shared" / "corpus" / "course"
TABLES = ("kernels", "metrics", "activities", "api_calls", "samples", "regions", "runs", "files")


@dataclass
class Measured:
    wall: float
    cpu: float
    peak: int
    code: int
    load: float

    def line(self) -> str:
        return (f"{self.wall:7.2f} s  CPU {self.cpu:7.2f} s (CPU/wall {self.cpu / max(self.wall, 1e-9):4.2f})  "
                f"peak RSS {self.peak / 2**20:6.0f} MB  load {self.load:5.2f}  exit {self.code}")


def measure(*args: str | Path, repeat: int = 1, before=None) -> Measured:
    """The run with the shortest wall time of `repeat` (each after `before()`), with its CPU
    time and load; the largest peak RSS of them all."""
    runs = []
    for _ in range(repeat):
        if before is not None:
            before()
        load = os.getloadavg()[0]
        wall, peak, cpu, code = run_measured([*ROOFREPORT, *map(str, args)])
        runs.append(Measured(wall, cpu, peak, code, (load + os.getloadavg()[0]) / 2))
    best = min(runs, key=lambda m: m.wall)
    best.peak = max(m.peak for m in runs)
    return best


def build_campaign(dest: Path, weeks: int) -> Path:
    """The course folders copied into `weeks` weekly folders under `dest`."""
    for week in range(1, weeks + 1):
        target = dest / f"week{week:02d}"
        if not target.exists():
            shutil.copytree(COURSE, target, ignore=shutil.ignore_patterns("MANIFEST.tsv"))
    os.sync()
    return dest


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not any(
        part.startswith(".") for part in p.relative_to(folder).parts))


def change(campaign: Path, fraction: float, seed: int = 17) -> tuple[int, Path]:
    """Change `fraction` of the files (every other one cut to 95 % of its bytes, as a log cut
    off; the rest with a line appended) and delete one; returns (files changed, deleted)."""
    rng = random.Random(seed)
    files = files_under(campaign)
    chosen = rng.sample(files, max(1, round(fraction * len(files))) + 1)
    deleted, changed = chosen[0], chosen[1:]
    for n, path in enumerate(changed):
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * 0.95)] if n % 2 else data + b"\nappended by the benchmark\n")
    deleted.unlink()
    os.sync()
    return len(changed), deleted


def tables_equal(dataset_dir: Path, plain_dir: Path) -> str:
    """"equal" when the dataset folder's tables equal the plain tables, else what differs."""
    import roofreport

    data = roofreport.read(dataset_dir) if (dataset_dir / "manifest.json").exists() else None
    different = []
    for name in TABLES:
        left = data.tables[name] if data is not None else pl.read_parquet(dataset_dir / f"{name}.parquet")
        try:
            assert_frame_equal(left, pl.read_parquet(plain_dir / f"{name}.parquet"))
        except AssertionError:
            different.append(name)
    return "equal" if not different else "DIFFERENT: " + ", ".join(different)


def course_rates(work: Path) -> None:
    print("\nfiles per second, `roofreport parse FOLDER -o DIR` (course folders of the corpus):")
    total_files, total_wall, total_bytes = 0, 0.0, 0
    for folder in sorted(p for p in COURSE.iterdir() if p.is_dir()):
        files = files_under(folder)
        size = sum(f.stat().st_size for f in files)
        out = work / f"course-{folder.name}"
        m = measure("parse", folder, "-o", out, "-q")
        total_files, total_wall, total_bytes = total_files + len(files), total_wall + m.wall, total_bytes + size
        print(f"  {folder.name:<38} {len(files):4d} files {size / 1e6:6.1f} MB  {len(files) / m.wall:6.1f} files/s  "
              f"{size / 1e6 / m.wall:5.2f} MB/s  | {m.line()}")
        shutil.rmtree(out, ignore_errors=True)
    print(f"  {'all eight, one after the other':<38} {total_files:4d} files {total_bytes / 1e6:6.1f} MB  "
          f"{total_files / total_wall:6.1f} files/s  {total_bytes / 1e6 / total_wall:5.2f} MB/s")


def small_file_costs(folder: Path, work: Path) -> None:
    """Where a small file's time goes, in this process, one file after the other (CPU time):
    start-up, sniffing, each reader's first use (its imports and grammar), parsing, schema
    conformance, the fingerprints an update keeps, grouping runs and enriching, writing."""
    _, _, imports, _ = run_measured([sys.executable, "-c", "import roofreport"])   # once per process
    from roofreport.pipeline import discover, duplicates, ingest, store
    from roofreport.pipeline.sniff import sniff
    from roofreport.tables import schema

    costs = dict.fromkeys(("sniff", "first use of a reader", "parse", "conform", "fingerprints"), 0.0)
    found = discover.discover([folder])
    seen_specs, parsed, size = set(), 0, 0
    for path, _ in found:
        clock = time.process_time()
        sniffed = sniff(path)
        costs["sniff"] += time.process_time() - clock
        size += sniffed.size
        if not sniffed.readable:
            continue
        clock = time.process_time()
        result = ingest.parse_file(path, sniffed.spec.name, sniffed.variant, str(path))
        key = "parse" if sniffed.spec.name in seen_specs else "first use of a reader"
        costs[key] += time.process_time() - clock
        seen_specs.add(sniffed.spec.name)
        clock = time.process_time()
        tables = {name: schema.conform(name, frame.with_columns(pl.lit(str(path)).alias("source_file")))
                  for name, frame in result.tables.items() if frame.height}
        costs["conform"] += time.process_time() - clock
        clock = time.process_time()
        duplicates.tables_digest(tables)
        duplicates.file_digest(path)
        costs["fingerprints"] += time.process_time() - clock
        parsed += 1
    clock = time.process_time()
    data = ingest.ingest([folder], jobs=1)
    whole = time.process_time() - clock
    reading = costs["sniff"] + costs["parse"] + costs["first use of a reader"] + costs["conform"]
    clock = time.process_time()
    data.write(work / "small-plain")
    costs["write, one file per table"] = time.process_time() - clock
    clock = time.process_time()
    store.update([folder], work / "small-dataset", jobs=1)
    costs["dataset's own (first --update - ingest)"] = time.process_time() - clock - whole
    costs["group runs, enrich (ingest - reading)"] = max(whole - reading, 0.0)
    print(f"\nwhere a small file's time goes (CPU, in one process): {folder.name}, {len(found)} files "
          f"({parsed} logs), {size / 1e6:.1f} MB; a process's python + import roofreport {imports:.2f} s once")
    for name, seconds in costs.items():
        print(f"  {name:<46} {seconds:6.2f} s  {seconds / len(found) * 1e3:6.2f} ms/file")
    print(f"  {'ingest in this process, all of it':<46} {whole:6.2f} s  {whole / len(found) * 1e3:6.2f} ms/file  "
          f"{size / 1e6 / whole:5.2f} MB/s")


def campaign_round(work: Path, weeks: int, dask: bool, check: bool = True, repeat: int = 1) -> dict:
    """One campaign of `weeks` weeks: full parse, dataset, no-op and 1 % updates, Dask; the
    full parse and the updates best of `repeat` (each update from the same dataset)."""
    camp = build_campaign(work / f"campaign-{weeks}", weeks)
    files = files_under(camp)
    size = sum(f.stat().st_size for f in files)
    print(f"\ncampaign: {weeks} weeks of the course folders, {len(files)} files, {size / 1e6:.0f} MB"
          + (f", best of {repeat}" if repeat > 1 else ""))
    plain, dataset = work / f"plain-{weeks}", work / f"dataset-{weeks}"
    full = measure("parse", camp, "-o", plain, "-q", repeat=repeat)
    print(f"  full parse                  {full.line()}  {len(files) / full.wall:6.1f} files/s")
    first = measure("parse", camp, "-o", dataset, "--update", "-q")
    print(f"  first --update (dataset)    {first.line()}")
    saved = work / f"dataset-{weeks}-saved"
    shutil.copytree(dataset, saved, symlinks=True)
    restore = _restorer(saved, dataset)
    noop = measure("parse", camp, "-o", dataset, "--update", "-q", repeat=repeat, before=restore)
    print(f"  --update, nothing changed   {noop.line()}  {noop.wall / full.wall:6.1%} of the full parse")
    changed, deleted = change(camp, 0.01)
    update = measure("parse", camp, "-o", dataset, "--update", "-q", repeat=repeat, before=restore)
    verdict = "OK" if update.wall <= 0.10 * full.wall else "MISS"
    print(f"  --update, {changed} changed, 1 deleted  {update.line()}  {update.wall / full.wall:6.1%} of the "
          f"full parse (goal <= 10 %) {verdict}; CPU {update.cpu / full.cpu:5.1%} of the full parse's")
    shutil.rmtree(saved, ignore_errors=True)
    result = {"files": len(files), "full": full, "update": update, "noop": noop, "first": first}
    if check:
        fresh = measure("parse", camp, "-o", plain, "-q")
        print(f"  fresh parse of the changed logs  {fresh.line()}")
        print(f"  tables of the update vs the fresh parse: {tables_equal(dataset, plain)}")
        if dask:
            out = work / f"dask-{weeks}"
            run = measure("parse", camp, "-o", out, "--executor", "dask", "-q")
            print(f"  --executor dask (LocalCluster, 2 workers)  {run.line()}")
            print(f"  tables of the Dask run vs the local run: {tables_equal(out, plain)}")
            result["dask"] = run
    for folder in (plain, dataset, work / f"dask-{weeks}"):
        shutil.rmtree(folder, ignore_errors=True)
    return result


def memory_round(work: Path, weeks: int) -> tuple[int, Measured]:
    """Peak RSS of a full `parse` and of a first `parse --update` on a campaign of `weeks`."""
    camp = build_campaign(work / f"campaign-{weeks}", weeks)
    files = files_under(camp)
    size = sum(f.stat().st_size for f in files)
    print(f"\nmemory: {weeks} weeks of the course folders, {len(files)} files, {size / 1e6:.0f} MB", flush=True)
    # (a plain parse reads through a spooled dataset folder of its own, as a first --update
    # does, then streams the tables out: one measurement stands for both)
    out = work / f"memory-{weeks}"
    run = measure("parse", camp, "-o", out, "-q")
    verdict = "OK" if run.peak < 2**30 else "MISS"
    print(f"  parse -o DIR  {run.line()}  {len(files) / run.wall:6.1f} files/s  peak under 1 GB: {verdict}",
          flush=True)
    print(f"  {_written(out, len(files))}", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(camp, ignore_errors=True)
    return len(files), run


def _written(out: Path, files: int) -> str:
    """What the parse wrote: every file in the files table, and the rows of each table (exit 1
    says that some logs failed, as the course folders' do, but an internal error says the same)."""
    if not (out / "files.parquet").is_file():
        return "tables: NONE WRITTEN"
    counts = {name: pl.scan_parquet(out / f"{name}.parquet").select(pl.len()).collect().item()
              for name in TABLES if (out / f"{name}.parquet").is_file()}
    listed = "every file listed" if counts["files"] == files else f"MISSING FILES: {counts['files']} of {files}"
    return f"tables: {listed}; " + ", ".join(f"{name} {n:,}" for name, n in counts.items())


def memory_growth(measured: list[tuple[int, Measured]]) -> None:
    """The peak's growth per file between the campaign sizes measured, and the peak it
    points to at 100k files: flat memory shows as a few KB a file."""
    measured = sorted(measured, key=lambda m: m[0])
    for (files_a, a), (files_b, b) in zip(measured, measured[1:]):
        per_file = (b.peak - a.peak) / max(files_b - files_a, 1)
        print(f"  {files_a} -> {files_b} files: peak {a.peak / 2**20:.0f} -> {b.peak / 2**20:.0f} MB, "
              f"{per_file / 1024:+.1f} KB a file (at 100k files: {(b.peak + per_file * (100_000 - files_b)) / 2**20:.0f} MB)")


def _restorer(saved: Path, dataset: Path):
    def restore() -> None:
        shutil.rmtree(dataset, ignore_errors=True)
        shutil.copytree(saved, dataset, symlinks=True)
        os.sync()
    return restore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=4, help="weeks of the campaign measured in full")
    parser.add_argument("--scaling", default="2,8,17",
                        help="more campaign sizes, in weeks (590 files each), for the scaling table; '' for none")
    parser.add_argument("--no-dask", action="store_true", help="leave out the Dask executor")
    parser.add_argument("--memory", default="",
                        help="campaign sizes, in weeks (590 files each), whose peak RSS is measured "
                             "(16: 9.4k files, 85: 50k files); '' for none")
    parser.add_argument("--memory-only", action="store_true", help="measure only the --memory campaigns")
    parser.add_argument("--no-course", action="store_true", help="leave out the course folders' files/s")
    parser.add_argument("--keep", action="store_true", help="keep the temporary campaign folder")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of the full parse and the updates of --weeks (the best wall time counts)")
    args = parser.parse_args()
    if not COURSE.is_dir():
        sys.exit(f"the corpus course folders are missing ({COURSE})")
    dask = not args.no_dask and _has_dask()
    print(f"roofreport campaign benchmark — {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"polars {pl.__version__}, Python {sys.version.split()[0]}, load average at start "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if not dask and not args.no_dask:
        print("(Dask distributed is not installed: pip install 'roofreport[dask]' to measure it)")
    work = Path(tempfile.mkdtemp(prefix="roofreport-campaign-"))
    try:
        measured = [memory_round(work, weeks) for weeks in [int(w) for w in args.memory.split(",") if w.strip()]]
        memory_growth(measured)
        if args.memory_only:
            return
        if not args.no_course:
            course_rates(work)
            small_file_costs(COURSE / "srinidhigoud-examples", work)
        rounds = {args.weeks: campaign_round(work, args.weeks, dask, repeat=args.repeat)}
        for weeks in [int(w) for w in args.scaling.split(",") if w.strip()]:
            if weeks not in rounds:
                rounds[weeks] = campaign_round(work, weeks, False, check=False)
                shutil.rmtree(work / f"campaign-{weeks}", ignore_errors=True)
        print("\nscaling (full parse, and --update after 1 % changed and 1 deleted; wall and CPU seconds):")
        print(f"  {'files':>6}  {'full s':>7}  {'CPU s':>7}  {'files/s':>7}  {'peak MB':>7}  "
              f"{'update s':>8}  {'CPU s':>6}  {'share':>6}  {'CPU share':>9}  {'no-op s':>7}  {'load':>5}")
        for weeks in sorted(rounds):
            r = rounds[weeks]
            full, update = r["full"], r["update"]
            print(f"  {r['files']:6d}  {full.wall:7.2f}  {full.cpu:7.2f}  {r['files'] / full.wall:7.1f}  "
                  f"{full.peak / 2**20:7.0f}  {update.wall:8.2f}  {update.cpu:6.2f}  {update.wall / full.wall:6.1%}  "
                  f"{update.cpu / full.cpu:9.1%}  {r['noop'].wall:7.2f}  {full.load:5.2f}")
        print(f"\nload average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _has_dask() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
