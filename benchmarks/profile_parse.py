"""Where a `roofreport` command's CPU time goes, by stage and by function (issue #35's profiles).

    python benchmarks/profile_parse.py [--top 25] [--under FUNC] -- parse FILE -o DIR -j 1 --quiet

Runs the command in this process under cProfile with a CPU clock (`time.process_time`: user +
sys of every thread, polars' included, so the figures hold on a loaded machine where a wall
clock would not), then prints the CPU seconds of each stage of ingest and the roofreport
functions with the most cumulative CPU time (`--under` restricts them to those called, at any
depth, from functions whose name holds FUNC, e.g. `families/` or `enrich`). Polars' work is
counted in the roofreport function that called `collect` or the eager operation.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

# (label, path suffix, function name): each stage is the cumulative time of its function.
STAGES = [
    ("sniff", "pipeline/sniff.py", "sniff"),
    ("reader (families/)", "families/spec.py", "__call__"),
    ("  line splitting", "families/common/textio.py", "split_lines"),
    ("  grammar regex (classify)", "grammar/__init__.py", "classify_lines"),
    ("  grammar regex (classify, small)", "grammar/__init__.py", "classify"),
    ("  CSV pieces", "families/common/pieces.py", "read_csv_pieces"),
    ("schema conformance", "tables/schema.py", "conform"),
    ("row digest (duplicates)", "pipeline/duplicates.py", "tables_digest"),
    ("group runs", "pipeline/assemble.py", "plan_runs"),
    ("enrich (finish)", "pipeline/assemble.py", "finish"),
    ("  kernel counters", "enrich/counters.py", "fill_kernel_counters"),
    ("model: run totals, in_run_total", "api.py", "_with_totals"),
    ("write tables (Parquet)", "tables/output.py", "write_tables"),
]


def _short(path: str) -> str:
    return path.split("/roofreport/", 1)[1] if "/roofreport/" in path else path


def _descendants(stats: dict, roots: set) -> set:
    """Functions called, at any depth, from `roots` (by the profile's caller links)."""
    children: dict = {}
    for func, (_, _, _, _, callers) in stats.items():
        for caller in callers:
            children.setdefault(caller, set()).add(func)
    seen, todo = set(roots), list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def report(stats: pstats.Stats, top: int, under: str | None) -> list[str]:
    raw = stats.stats
    total = stats.total_tt
    out = [f"CPU seconds in all: {total:.2f}"]
    cli = [v[3] for (path, _, name), v in raw.items() if path.endswith("roofreport/cli.py") and name == "main"]
    if cli:
        out.append(f"  {'start-up (interpreter, imports)':<36} {total - max(cli):7.2f}")
    for label, suffix, name in STAGES:
        found = [v[3] for (path, _, fname), v in raw.items() if path.endswith(suffix) and fname == name]
        out.append(f"  {label:<36} {sum(found):7.2f}" if found else f"  {label:<36}       -")
    pool = set(raw)
    if under:
        pool = {f for f in _descendants(raw, {f for f in raw if under in f"{_short(f[0])}:{f[2]}"})
                if f[2] != "<module>"}   # (a module imported on first use is not the caller's work)
    rows = sorted(((v[3], v[2], v[1], f) for f, v in raw.items() if f in pool and "/roofreport/" in f[0]),
                  reverse=True)
    out.append(f"top {top} roofreport functions by cumulative CPU{' under ' + under if under else ''}"
               " (cumulative, own, calls):")
    for cum, own, calls, (path, line, name) in rows[:top]:
        out.append(f"  {cum:7.2f} {own:7.2f} {calls:7d}  {_short(path)}:{line} {name}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--under", default=None, metavar="FUNC")
    parser.add_argument("--save", default=None, metavar="FILE", help="also keep the profile (pstats)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    profiler = cProfile.Profile(time.process_time)
    sys.argv = ["roofreport", *command]
    profiler.enable()
    try:
        from roofreport.__main__ import main as roofreport_main

        roofreport_main()
    except SystemExit as done:
        code = done.code
    else:
        code = 0
    profiler.disable()
    if args.save:
        profiler.dump_stats(args.save)
    stats = pstats.Stats(profiler)
    print(f"roofreport {' '.join(command)}  (exit {code})")
    print("\n".join(report(stats, args.top, args.under)))


if __name__ == "__main__":
    main()
