"""A library that leaves its caller alone (issue #30): `import roofreport`, and using it, change
no environment variable and freeze nothing in the caller's process; the command's own process
applies `roofreport.tuning` (before polars is first imported, where it was measured to help)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from roofreport import tuning
from tests.conftest import ROOT, SAMPLE_LOGS

ONE_LOG = SAMPLE_LOGS / "v100" / "dmon" / "gpu_utilization_v100.txt"

# Imports polars, notes the process state, imports roofreport and reads a log, notes it again.
_CALLER = f"""
import gc, json, os, sys
import polars
before = (dict(os.environ), gc.get_freeze_count())
import roofreport
imported = (dict(os.environ), gc.get_freeze_count())
roofreport.read({str(ONE_LOG)!r})
used = (dict(os.environ), gc.get_freeze_count())
print(json.dumps([before, imported, used]))
"""

# Runs the command as the console script does, then reports the state its process was left in.
_COMMAND = f"""
import gc, json, os, sys
sys.argv = ["roofreport", "inspect", {str(ONE_LOG)!r}]
try:
    from roofreport.__main__ import main
    main()
except SystemExit as stop:
    code = stop.code
print(json.dumps([code, os.environ.get({tuning.ALLOCATOR_ENV!r}), gc.get_freeze_count()]), file=sys.stderr)
"""


def _run(script: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   if key not in (tuning.ALLOCATOR_ENV, "ROOFREPORT_TUNING")}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                          env={**environment, **env}, timeout=120)


def test_importing_and_using_roofreport_leaves_the_callers_process_as_it_was():
    done = _run(_CALLER)
    assert done.returncode == 0, done.stderr
    before, imported, used = json.loads(done.stdout)
    assert imported == before and used == before
    assert before[1] == 0    # nothing frozen by anyone


def _command_state(**env: str) -> tuple[int, str, int]:
    done = _run(_COMMAND, **env)
    return tuple(json.loads(done.stderr.strip().splitlines()[-1]))


# polars, as it is imported, puts its own defaults in front of the variable's value (jemalloc
# reads the settings left to right, the last one of a name winning): the ends are compared.

def test_the_command_tunes_its_own_process():
    code, allocator, frozen = _command_state()
    assert code == 0 and allocator.endswith(tuning.ALLOCATOR_CONF) and frozen > 10_000


def test_the_command_keeps_the_users_allocator_setting_and_tuning_turns_off():
    code, allocator, _ = _command_state(_RJEM_MALLOC_CONF="narenas:1")
    assert code == 0 and allocator.endswith("narenas:1") and tuning.ALLOCATOR_CONF not in allocator
    code, allocator, frozen = _command_state(ROOFREPORT_TUNING="0")
    assert code == 0 and tuning.ALLOCATOR_CONF not in (allocator or "") and frozen == 0
