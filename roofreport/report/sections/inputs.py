"""The "Inputs" appendix: every file found, what it was read as, what it gave, and what went wrong.

The HTML lists every file under its folder (a folder row, then the file names), each with its
format and version, status and rows, and every file skipped with why. The PDF summarises them
in a page or two: files per folder, format and status, and skipped files per reason (the
full lists are "screen" blocks, the summary "print" ones: `context.py`). Both list every
failure (the parser's message with its file, line and column) and every warning code, one row
per code with how many files and warnings, examples of where, and the first message.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import replace
from pathlib import PurePath

from roofreport.report import fmt
from roofreport.report.context import Column, Heading, Paragraph, Section, Span, Table
from roofreport.report.tables import cell, name_cell, table

_EXAMPLES = 3
_PRINTED_EXAMPLES = 2
_ERROR_LINES = 3       # a failure's message: its first lines (the caret picture may follow)


def display_root(paths: list[str]) -> str:
    """The folder every file lies under (shown once), so rows can show shorter relative paths."""
    if not paths:
        return ""
    if len(paths) == 1:
        return str(PurePath(paths[0]).parent)
    try:
        return os.path.commonpath(paths)
    except ValueError:
        return ""


def relative(path: str, root: str) -> str:
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    return path


def rows_text(rows: dict[str, int]) -> str:
    return ", ".join(f"{fmt.count(n)} {name}" for name, n in sorted(rows.items()) if n) or "–"


def inputs_section(files: list) -> Section:
    section = Section("inputs", "Inputs", appendix=True)
    if not files:
        section.empty = "No files were given (pass log files or folders to `roofreport build`)."
        return section
    root = display_root([f.path for f in files])
    read = [f for f in files if f.status != "skipped"]
    skipped = [f for f in files if f.status == "skipped"]
    section.blocks.append(_summary(files, root))
    if read:
        section.blocks.append(replace(_files_table(read, root), media="screen"))
        section.blocks.append(_counts_table(files, root))
    section.blocks += _problems(read, root)
    if skipped:
        section.blocks.append(Heading("Files skipped and excluded"))
        section.blocks.append(replace(_by_folder(["File", "Why"], ["40%", "60%"],
                                                 [(relative(f.path, root), [f.error or "–"]) for f in skipped],
                                                 css="skipped"), media="screen"))
        section.blocks.append(_skipped_counts(skipped))
    return section


def _counts_table(files: list, root: str):
    """The PDF's summary of the files: per folder and format, how many files of each status."""
    statuses = ["ok", "partial", "error", "skipped"]
    counts: dict[tuple[str, str], Counter] = {}
    for file in files:
        folder = relative(file.path, root).rpartition("/")[0] or "."
        fmt_ = file.family or "not a log" if file.status == "skipped" else _format_family(file)
        counts.setdefault((folder, fmt_), Counter())[file.status] += 1
    used = [s for s in statuses if any(c[s] for c in counts.values())]
    rows = [[cell(f"{folder}/", code=True), fmt_] + [fmt.count(c[s]) if c[s] else "–" for s in used]
            for (folder, fmt_), c in sorted(counts.items())]
    return Table(columns=[Column("Folder", width="46%"), Column("Format", width="22%")]
                 # rounded down: 3 x "11%" made the table 101 % wide, into the right margin
                 + [Column(s, numeric=True, width=f"{int(320 / len(used)) / 10}%") for s in used],
                 rows=[[_numeric(v, i >= 2) for i, v in enumerate(row)] for row in rows],
                 caption="Files per folder, format and status (the HTML report lists every file)",
                 css="inputs", media="print")


def _format_family(file) -> str:
    return " ".join(p for p in (file.family, file.tool_version) if p) or "–"


def _numeric(value, numeric: bool):
    return cell(value, css="num" if numeric else "")


def _skipped_counts(skipped: list):
    """The PDF's summary of the files left unread: how many for each reason."""
    reasons = Counter(_reason_kind(f.error or "–") for f in skipped)
    rows = [[reason, fmt.count(n)] for reason, n in reasons.most_common()]
    return replace(table(["Why", "Files#"], rows, caption="Files skipped and excluded, by reason (the HTML "
                                                           "report lists each)"), media="print")


def _reason_kind(reason: str) -> str:
    """A skip reason without what is particular to one file (an excluding glob's match)."""
    return reason.split(":", 1)[0] if reason.startswith("excluded") else reason


def _summary(files: list, root: str) -> Paragraph:
    counts = Counter(f.status for f in files)
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    families = Counter(f.family for f in files if f.family and f.status != "skipped")
    fams = ", ".join(f"{n} {family}" for family, n in sorted(families.items())) or "none"
    spans = [Span(f"{len(files)} files found ({parts}); logs by family: {fams}.")]
    if root:
        spans += [Span(" Paths below are relative to "), Span(root, code=True), Span(".")]
    return Paragraph(spans)


def _format(file) -> str:
    parts = [file.family, file.variant, file.tool_version]
    return " ".join(p for p in parts if p) or "–"


def _files_table(read: list, root: str):
    rows = []
    for file in read:
        status = cell(file.status, css=f"status-{file.status}")
        rows.append((relative(file.path, root), [_format(file), status, rows_text(file.rows),
                                              fmt.count(len(file.warnings)) if file.warnings else "–"]))
    return _by_folder(["File", "Format and version", "Status", "Rows", "Warnings#"],
                      ["36%", "20%", "7%", "28%", "9%"], rows, caption="Files read", css="inputs")


def _by_folder(labels: list[str], widths: list[str], rows: list[tuple[str, list]], caption: str | None = None,
               css: str = ""):
    """A table of files, sorted by path, with a row naming each folder before its files."""
    cols = [Column(label.rstrip("#"), numeric=label.endswith("#"), width=width)
            for label, width in zip(labels, widths)]
    out, folder = [], None
    for path, rest in sorted(rows, key=lambda row: row[0]):
        parent, _, name = path.rpartition("/")
        if parent != folder:
            folder = parent
            out.append([cell(f"{parent}/" if parent else "./", code=True, css="folder", span=len(cols))])
        out.append([name_cell(name, 200)] + rest)          # a file is named in full: wrap, never cut
    return table(cols, out, caption=caption, css=css)


def _problems(read: list, root: str) -> list:
    blocks: list = []
    failed = [f for f in read if f.error]
    if failed:
        blocks.append(Heading("Files that failed"))
        # by folder, as the files read are: a folder named once above its files, not on every row
        for media, lines in (("screen", _ERROR_LINES), ("print", 1)):    # the PDF: each message's first line
            rows = [(relative(f.path, root),
                     [cell(f.status, css=f"status-{f.status}"),
                      cell(_first_lines(_own_file_left_out(_unrooted(f.error, root), relative(f.path, root)), lines),
                           code=True)])
                    for f in failed]
            blocks.append(replace(_by_folder(["File", "Status", "Message"], ["30%", "6%", "64%"], rows,
                                             css="failed"), media=media))
    warned = [f for f in read if f.warnings]
    if warned:
        blocks.append(Heading("Warnings"))
        # the PDF gives two places of each code, the HTML three
        blocks += [replace(_codes_table(warned, root, examples), media=media)
                   for media, examples in (("screen", _EXAMPLES), ("print", _PRINTED_EXAMPLES))]
    return blocks


_PLACE = re.compile(r"(\d+)(?::(\d+))?: ")


def _own_file_left_out(message: str, path: str) -> str:
    """A message opening with the row's own file (`path:6: ...`, `path:6:3: ...`, `path: ...`)
    without it, its place kept ("line 6: ...", "line 6, column 3: ..."): the File column names
    the file, printed once."""
    if not path or not message.startswith(path + ":"):
        return message
    rest = message[len(path) + 1:]
    place = _PLACE.match(rest)
    if place:
        line, column = place.groups()
        return f"line {line}{f', column {column}' if column else ''}: {rest[place.end():]}"
    return rest.lstrip()


def _first_lines(text: str, count: int = _ERROR_LINES) -> str:
    lines = text.splitlines()
    more = f" (+{len(lines) - count} lines)" if len(lines) > count else ""
    return "\n".join(lines[:count]) + more


def _unrooted(text: str, root: str) -> str:
    """A parser message with the common folder left out of the paths it quotes."""
    return text.replace(root.rstrip("/") + "/", "") if root else text


def _by_code(warnings: list) -> dict[str, list]:
    by_code: dict[str, list] = {}
    for warning in warnings:
        by_code.setdefault(warning.code, []).append(warning)
    return by_code


def _codes_table(warned: list, root: str, examples: int = _EXAMPLES):
    """One row per warning code: files, warnings, where (the first few file:line) and the first message."""
    rows: dict[str, dict] = {}
    for file in warned:
        for code, group in _by_code(file.warnings).items():
            entry = rows.setdefault(code, {"files": 0, "warnings": 0, "where": [],
                                           "message": group[0].message.splitlines()[0]})
            entry["files"] += 1
            entry["warnings"] += len(group)
            if len(entry["where"]) < examples:
                line = f":{group[0].line}" if group[0].line else ""
                entry["where"].append(f"{relative(file.path, root)}{line}")
    # the examples (paths, in monospace) take the room: at 35 % three of them took five lines
    cols = [Column("Code", width="14%"), Column("Files", numeric=True, width="6%"),
            Column("Warnings", numeric=True, width="8%"), Column("For example", width="41%"),
            Column("First message", width="31%")]
    body = []
    for code, summary in sorted(rows.items(), key=lambda item: (-item[1]["warnings"], item[0])):
        more = " …" if summary["files"] > len(summary["where"]) else ""
        body.append([cell(code, code=True), fmt.count(summary["files"]), fmt.count(summary["warnings"]),
                     cell("; ".join(summary["where"]) + more, code=True), summary["message"]])
    return table(cols, body, caption="Warnings by code", css="warnings")
