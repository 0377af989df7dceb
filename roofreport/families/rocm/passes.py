"""rocprofv3's counter passes: one `pmc_N/` folder per `pmc:` line of its input file.

rocprofv3 collects at most the counters the hardware can count at once per run of the
application; given an input file with several `pmc:` lines it runs the application once per
line and writes each pass under its own folder:

    <output>/pmc_1/<host>/<pid>_counter_collection.csv
    <output>/pmc_2/<host>/<pid>_counter_collection.csv      (a new process: a new pid)

(the `<host>` level is rocprofv3's default `%hostname%/%pid%` output path; without `-d` it may be
missing). Each pass numbers its dispatches from 1 again, and a pass can replay the program with
a dispatch more or less (a blit), so the passes of one dispatch are joined on the kernel name and
its occurrence number (the k-th launch of that kernel), never on `Dispatch_Id` across folders.
The passes are one run of the application (`pipeline/runs.py` groups them in `application_dir`):
its FLOP counters from one pass and its byte counters from another meet in one row per
dispatch (`model/counted.py`).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_PASS = re.compile(r"^pmc_(\d{1,3})$")


def counter_pass(rel: PurePosixPath | str) -> tuple[PurePosixPath, int] | None:
    """(the application's folder, the pass number) of a file inside a `pmc_N/` pass folder (the
    nearest such folder of its path), or None for any other file."""
    path = PurePosixPath(str(rel).replace("\\", "/"))
    parts = path.parts[:-1]
    for index in range(len(parts) - 1, -1, -1):
        found = _PASS.match(parts[index])
        if found:
            return PurePosixPath(*parts[:index]) if index else PurePosixPath("."), int(found.group(1))
    return None
