"""The "Inputs" section: every file found, what it was read as, what it gave, and what went wrong.

Warnings are grouped per file and code (a truncated-name warning repeated 4,000 times is one
line with a count and the first few line numbers); skipped files say why they were skipped;
failed files show the parser's message with its caret picture.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import PurePath

from roofreport.report import fmt
from roofreport.report.context import Bullets, Heading, Paragraph, Section, Span
from roofreport.report.tables import cell, name_cell, table

_EXAMPLES = 3
DETAILED_FILES = 8   # up to this many warned files, each warning's message is printed with it


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
    section = Section("inputs", "Inputs")
    if not files:
        section.empty = "No files were given (pass log files or folders to `roofreport build`)."
        return section
    root = display_root([f.path for f in files])
    read = [f for f in files if f.status != "skipped"]
    skipped = [f for f in files if f.status == "skipped"]
    section.blocks.append(_summary(files, root))
    if read:
        section.blocks.append(_files_table(read, root))
    section.blocks += _problems(read, root)
    if skipped:
        section.blocks.append(Heading("Files skipped"))
        section.blocks.append(table(["File", "Why"], [[name_cell(relative(f.path, root), 90), f.error or "–"]
                                                      for f in skipped], limit=200, what="skipped files"))
    return section


def _summary(files: list, root: str) -> Paragraph:
    counts = Counter(f.status for f in files)
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    families = Counter(f.family for f in files if f.family and f.status != "skipped")
    fams = ", ".join(f"{n} {family}" for family, n in sorted(families.items())) or "none"
    spans = [Span(f"{len(files)} files found ({parts}); logs by family: {fams}.")]
    if root:
        spans += [Span(" Paths below are relative to "), Span(root, code=True), Span(".")]
    return Paragraph(spans)


def _files_table(read: list, root: str):
    rows = []
    for f in read:
        status = cell(f.status, css=f"status-{f.status}")
        rows.append([name_cell(relative(f.path, root), 70), f.family or "–", f.variant or "–",
                     f.tool_version or "–", status, rows_text(f.rows),
                     fmt.count(len(f.warnings)) if f.warnings else "–", name_cell(f.run, 40)])
    return table(["File", "Family", "Variant", "Tool version", "Status", "Rows", "Warnings#", "Run"], rows,
                 caption="Files read", css="inputs")


def _problems(read: list, root: str) -> list:
    blocks: list = []
    failed = [f for f in read if f.error]
    if failed:
        blocks.append(Heading("Files that failed"))
        blocks.append(Bullets([Paragraph([Span(relative(f.path, root), code=True),
                                          Span(f" ({f.status}): "), Span(_unrooted(f.error, root), code=True)],
                                         level="problem") for f in failed]))
    warned = [f for f in read if f.warnings]
    if warned:
        blocks.append(Heading("Warnings per file"))
        if len(warned) > DETAILED_FILES:      # a big folder: each message once, then where
            blocks.append(_codes_table(warned))
            blocks.append(Bullets([_compact_item(f, root) for f in warned]))
        else:
            blocks.append(Bullets([item for f in warned for item in _warning_items(f, root)]))
    return blocks


def _unrooted(text: str, root: str) -> str:
    """A parser message with the common folder left out of the paths it quotes."""
    return text.replace(root.rstrip("/") + "/", "") if root else text


def _by_code(warnings: list) -> dict[str, list]:
    by_code: dict[str, list] = {}
    for w in warnings:
        by_code.setdefault(w.code, []).append(w)
    return by_code


def _where(group: list) -> str:
    lines = [str(w.line) for w in group[:_EXAMPLES] if w.line]
    if not lines:
        return ""
    more = ", …" if len(group) > _EXAMPLES else ""
    return f" (line{'s' if len(lines) > 1 else ''} {', '.join(lines)}{more})"


def _codes_table(warned: list):
    rows: dict[str, list] = {}
    for f in warned:
        for code, group in _by_code(f.warnings).items():
            entry = rows.setdefault(code, [code, 0, 0, group[0].message.splitlines()[0]])
            entry[1] += 1
            entry[2] += len(group)
    return table(["Code", "Files#", "Warnings#", "First message"],
                 [[cell(c, code=True), fmt.count(n), fmt.count(k), m] for c, n, k, m in rows.values()],
                 caption="Warnings by code")


def _compact_item(f, root: str) -> Paragraph:
    spans = [Span(relative(f.path, root), code=True), Span(": ")]
    for i, (code, group) in enumerate(_by_code(f.warnings).items()):
        times = f" ×{len(group)}" if len(group) > 1 else ""
        spans += [Span("; " if i else ""), Span(code, code=True), Span(f"{times}{_where(group)}")]
    return Paragraph([s for s in spans if s.text], level="warning")


def _warning_items(f, root: str) -> list[Paragraph]:
    items = []
    for code, group in _by_code(f.warnings).items():
        times = f" ×{len(group)}" if len(group) > 1 else ""
        items.append(Paragraph([Span(relative(f.path, root), code=True), Span(": "), Span(code, code=True),
                                Span(f"{times}{_where(group)}: {group[0].message.splitlines()[0]}")], level="warning"))
    return items
