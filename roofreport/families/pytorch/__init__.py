"""PyTorch profiler output: which files are torch.profiler's, and which reader takes each.

Two kinds of file:

* Kineto Chrome-trace JSON (`prof.export_chrome_trace`, `tensorboard_trace_handler`:
  `.json`, `*.pt.trace.json`, `.json.gz`), read by `kineto.py` (a binary spec: it
  receives the path, gzip included). Recognised from the head of the (decompressed) file: one
  JSON object with Kineto's keys (`schemaVersion`, `deviceProperties`, `distributedInfo`) or
  `traceEvents` holding Kineto's event categories; other JSON, Chrome traces of other tools
  included, is left alone;
* the printed `key_averages().table()` (`table.py`), recognised by its dash rule,
  header and rule (`grammars/pytorch.lark`);
* a `FlopCounterMode` count saved as JSON (`counter.py`): the model FLOPs of a training step,
  for the MFU of the traces beside it.
"""

from __future__ import annotations

import re
import zlib

from roofreport.families.common.textio import HEAD_BYTES, Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "pytorch"
_GZIP_MAGIC = b"\x1f\x8b"
# Keys Kineto writes at the top of a trace (a Docker manifest has `schemaVersion` too: it is
# never enough alone), and the categories of its events.
_SCHEMA = re.compile(r'"schemaVersion"\s*:')
_KINETO_KEYS = re.compile(r'"(?:deviceProperties|distributedInfo|baseTimeNanoseconds)"\s*:')
_KINETO_CATEGORIES = re.compile(
    r'"cat"\s*:\s*"(?:cpu_op|kernel|cuda_runtime|cuda_driver|gpu_memcpy|gpu_memset|'
    r'user_annotation|gpu_user_annotation|python_function|Operator|Kernel|Runtime)"')
_TRACE_EVENTS = re.compile(r'"traceEvents"\s*:\s*\[')


def json_head(head: Head) -> str | None:
    """The head's text when it is a JSON object, gzip's decompressed head included."""
    raw = head.raw
    if raw.startswith(_GZIP_MAGIC):
        try:
            raw = zlib.decompressobj(wbits=47).decompress(raw, HEAD_BYTES)
        except zlib.error:
            return None
        text = raw.decode("utf-8", errors="replace")
    else:
        text = head.text
    text = text.lstrip("\ufeff \t\r\n")
    return text if text.startswith("{") else None


def sniff_kineto(head: Head) -> str | None:
    text = json_head(head)
    if text is None:
        return None
    schema, keys = _SCHEMA.search(text), _KINETO_KEYS.search(text)
    events = _TRACE_EVENTS.search(text)
    # Kineto's metadata beside its events; or Kineto's categories among a trace's events; or
    # (a head that stops before the events) Kineto's metadata keys together.
    if not ((events and (schema or keys or _KINETO_CATEGORIES.search(text, events.end())))
            or (schema and keys)):
        return None
    version = re.search(r'"schemaVersion"\s*:\s*(\d+)', text)
    variant = f"kineto trace (schema {version.group(1)})" if version else "kineto trace"
    return f"{variant}, gzip" if head.raw.startswith(_GZIP_MAGIC) else variant


def sniff_table(head: Head) -> str | None:
    if head.binary or "--  --" not in head.text:
        return None
    import polars as pl

    from roofreport.families.pytorch import table

    lines = pl.DataFrame({"text": head.lines}, schema={"text": pl.String}).with_row_index(
        "line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64))
    return "key_averages table" if table.find_tables(table.classified(lines)) else None


# A FlopCounterMode count saved as JSON (`counter.py`): an object whose "Global" scope maps
# operators to counts, or that gives "total_flops".
_COUNTER = re.compile(r'^\s*\{.*?"(?:Global"\s*:\s*\{\s*(?:"(?:aten|prims|torch)\.|\})|total_flops"\s*:)', re.DOTALL)


def sniff_counter(head: Head) -> str | None:
    if head.binary or not _COUNTER.match(head.text):
        return None
    return "flop counter"


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="pytorch-table", sniff=sniff_table,
               parse=DeferredReader("roofreport.families.pytorch.table", "parse_table"),
               marks=("---  ---",)),
    # A FlopCounterMode count saved as JSON beside a trace (`counter.py`).
    FormatSpec(family=FAMILY, name="pytorch-flop-counter", sniff=sniff_counter,
               parse=DeferredReader("roofreport.families.pytorch.counter", "parse_counter"), reads_json=True),
]

# The trace is read from its path (gzip or plain): a binary spec. It reads JSON documents: a
# `.json` file is offered to it although the suffix says "data, not a log".
BINARY_SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="pytorch-kineto", sniff=sniff_kineto,
               parse=DeferredReader("roofreport.families.pytorch.kineto", "parse_kineto"), binary=True,
               reads_json=True),
]
