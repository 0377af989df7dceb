"""Jetson `tegrastats` logs -> the `samples` table: what sniffing needs, and the spec.

A tegrastats log is one line per sample, each starting (after `--logfile`'s timestamp) with
`RAM used/totalMB`; the syntax of every L4T / JetPack generation is `grammars/tegrastats.lark`.
The reader (`read`) is imported only when such a file is parsed.
"""

from __future__ import annotations

import re

from roofreport import grammar
from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "tegrastats"
_MIN_SHARE = 0.5   # of the lines with data: a damaged line or two must not hide a log


def sniff(head: Head) -> str | None:
    """Claimed when the first line with data is a tegrastats line, and most are."""
    if "RAM " not in head.text:
        return None
    syntax = grammar.load("tegrastats")
    command, stats_line = syntax.pattern("command_line"), syntax.pattern("stats_line")
    lines = [line for line in head.lines if line.strip()]
    data = [line for line in lines if not command.match(line)]
    if not data or not stats_line.match(data[0]):
        return None
    stats = [line for line in data if stats_line.match(line)]
    if len(stats) < _MIN_SHARE * len(data):
        return None
    return variant(stats[0])


def variant(line: str) -> str:
    """The generation a line's spelling belongs to, and whether it is timestamped."""
    if re.search(r"(?:^| )GR3D \d", line):
        era = "L4T R21-R24"
    elif re.search(r" \d+mW/\d+mW", line):
        era = "JetPack 5+"
    else:
        era = "JetPack 3-4"
    stamped = grammar.load("tegrastats").pattern("stats_line").match(line).group("stamp")
    return f"{era}, timestamped" if stamped else era


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="tegrastats", sniff=sniff,
               parse=DeferredReader("roofreport.families.tegrastats.read", "parse"),
               marks=(" GR3D",)),
]
