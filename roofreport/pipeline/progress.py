"""What a training program's own progress lines say: its epoch size and the time of a batch.

A profiled program prints its progress between the profiler's lines (nvprof and ncu pass the
program's stdout through), and that is the best count of its training steps there is: the
profiler's loss kernels also run for validation batches, the progress lines say which is which.
Three layouts, each a rule of a common training loop, not of one course:

* PyTorch's ImageNet example (and the many scripts copied from it):
  `Epoch: [0][  10/4184]\tTime 0.048 (0.205)\tData 0.000 (0.101)\tLoss ...` for a training
  batch, `Test: [10/163]\tTime ...` for a validation batch. `Time` is the batch's elapsed time
  (data loading included), `Data` the part spent waiting for data, both in seconds, the running
  mean in parentheses;
* the "Epoch [1/5], Step [100/600], Loss: 2.2" loops of the PyTorch tutorials (no time);
* Keras' `4184/4184 [======] - 120s 29ms/step - loss: ...` (the epoch's last line: its size
  and the time per step).

`read_progress` returns the epoch size (`epoch_steps`, the training batches of one epoch as the
program printed it), the training epochs it began (`epochs`), the validation batches of an
epoch (`validation_steps`), and the steady-state time of a training batch (`step_time_s`, the
median of the printed batch times after the first epoch's first batch, which includes cuDNN's
autotuning and the first data; `data_time_s` likewise) with the line it first read them from.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from statistics import median

# The profilers whose logs pass the program's own output through (text logs only).
PASS_STDOUT = ("nvprof", "ncu", "nsys")
MAX_READ_BYTES = 64 << 20   # a log bigger than this is read for progress in its first part only

_NUMBER = r"(\d+(?:\.\d+)?)"
# PyTorch ImageNet example: "Epoch: [0][  10/4184]	Time  0.048 ( 0.205)	Data  0.000 ( 0.101)"
_IMAGENET = re.compile(r"^Epoch:\s*\[(\d+)\]\[\s*(\d+)/(\d+)\](?:\s+Time\s+" + _NUMBER + r"\s*\(\s*" + _NUMBER
                       + r"\s*\))?(?:\s+Data\s+" + _NUMBER + r")?", re.M)
_IMAGENET_TEST = re.compile(r"^Test:\s*\[\s*(\d+)/(\d+)\]", re.M)
# PyTorch tutorials: "Epoch [1/5], Step [100/600], Loss: 2.2"
_TUTORIAL = re.compile(r"^Epoch\s*\[(\d+)/(\d+)\],\s*Step\s*\[(\d+)/(\d+)\]", re.M)
# Keras: "4184/4184 [==============================] - 120s 29ms/step - loss: 0.1"
_KERAS = re.compile(r"^\s*(\d+)/(\d+) \[=+\] - [^\n]*?(\d+(?:\.\d+)?)(s|ms|us|µs)/step", re.M)
_UNIT = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


@dataclass(frozen=True)
class Progress:
    """A training program's progress as its log printed it (module docstring)."""

    layout: str                      # "pytorch-imagenet", "pytorch-tutorial", "keras"
    epoch_steps: int                 # training batches per epoch, as printed ("[0/4184]")
    epochs: int                      # training epochs the log printed to their end
    last_step: int                   # the last training batch index printed (of the last epoch)
    validation_steps: int | None     # validation batches per epoch ("Test: [0/163]")
    step_time_s: float | None        # steady-state elapsed time of one training batch
    data_time_s: float | None        # ... of which waiting for data
    timed_batches: int               # printed batch times behind step_time_s
    line: int                        # the first progress line (1-based)
    example: str                     # that line, shortened

    def as_dict(self) -> dict:
        return asdict(self)


MIN_TIMED = 3     # printed batch times fewer than this are no steady state
# A profiler that replays kernels to read counters (ncu always; nvprof with --metrics/--events)
# stretches every batch: its printed batch times are the profiler's, not the job's.
_REPLAYED = (b"will be replayed", b"==PROF==")


def read_progress(path: Path, encoding: str | None = None, family: str | None = None) -> Progress | None:
    """The progress of the program whose output `path` holds, or None when it prints none. The
    batch times are left out where the profiler replayed kernels (`family` "ncu", or the log
    says so) or fewer than MIN_TIMED were printed."""
    try:
        with open(path, "rb") as handle:
            # (read(n) sets n bytes aside first: a small log under a worker's memory limit
            # must not ask for MAX_READ_BYTES)
            data = handle.read(min(MAX_READ_BYTES, os.fstat(handle.fileno()).st_size))
    except OSError:
        return None
    if b"Epoch" not in data and b"/step" not in data:
        return None
    found = progress_of(data.decode(encoding or "utf-8", errors="replace"))
    if found is not None and (family == "ncu" or any(mark in data for mark in _REPLAYED)
                              or found.timed_batches < MIN_TIMED):
        found = replace(found, step_time_s=None, data_time_s=None)
    return found


def progress_of(text: str) -> Progress | None:
    """`read_progress` of a text already read."""
    if "Epoch" not in text and "/step" not in text:
        return None
    return _imagenet(text) or _tutorial(text) or _keras(text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _example(match: re.Match) -> str:
    line = match.group(0).strip()
    return line if len(line) <= 100 else line[:99] + "…"


def _imagenet(text: str) -> Progress | None:
    found = list(_IMAGENET.finditer(text))
    if not found:
        return None
    sizes = [int(m.group(3)) for m in found]
    size = max(set(sizes), key=sizes.count)
    epochs = {int(m.group(1)) for m in found}
    last = found[-1]
    steps = sorted({int(m.group(2)) for m in found if int(m.group(1)) == min(epochs)})
    every = min((b - a for a, b in zip(steps, steps[1:])), default=1)   # the print frequency
    # the last epoch printed to its end (its last line within one print interval of the size)?
    ended = len(epochs) if int(last.group(2)) + every >= size else len(epochs) - 1
    # steady state: every printed batch time but the first batch of the first epoch (cuDNN
    # autotuning, the first data): the median of the rest
    timed = [m for m in found if m.group(4) is not None and not (int(m.group(2)) == 0 and int(m.group(1)) == min(epochs))]
    times = [float(m.group(4)) for m in timed]
    data = [float(m.group(6)) for m in timed if m.group(6) is not None]
    tests = [int(m.group(2)) for m in _IMAGENET_TEST.finditer(text)]
    return Progress("pytorch-imagenet", size, ended, int(last.group(2)),
                    max(set(tests), key=tests.count) if tests else None,
                    median(times) if times else None, median(data) if len(data) == len(times) and data else None,
                    len(times), _line_of(text, found[0].start()), _example(found[0]))


def _tutorial(text: str) -> Progress | None:
    found = list(_TUTORIAL.finditer(text))
    if not found:
        return None
    sizes = [int(m.group(4)) for m in found]
    size = max(set(sizes), key=sizes.count)
    epochs = {int(m.group(1)) for m in found}
    steps = sorted({int(m.group(3)) for m in found})
    every = min((b - a for a, b in zip(steps, steps[1:])), default=1)
    ended = len(epochs) if int(found[-1].group(3)) + every > size else len(epochs) - 1
    return Progress("pytorch-tutorial", size, ended, int(found[-1].group(3)), None, None, None, 0,
                    _line_of(text, found[0].start()), _example(found[0]))


def _keras(text: str) -> Progress | None:
    found = [m for m in _KERAS.finditer(text) if m.group(1) == m.group(2)]   # an epoch's last line
    if not found:
        return None
    sizes = [int(m.group(2)) for m in found]
    size = max(set(sizes), key=sizes.count)
    # the first epoch's time per step includes compilation and autotuning: the later epochs' when any
    steady = found[1:] or found
    times = [float(m.group(3)) * _UNIT[m.group(4)] for m in steady]
    return Progress("keras", size, len(found), size, None, median(times), None, len(times),
                    _line_of(text, found[0].start()), _example(found[0]))
