"""Column mappings of every nvidia-smi output, as data: what each printed name means in the
`samples` table.

A new nvidia-smi spelling (or a wrapper's) is a new row here, not a new branch in a parser.
Targets starting with `_` are identities and times the parsers use before they become columns
(`_time`, `_bus`, `_date`, `_clock`); `None` means "known, deliberately not kept".
"""

from __future__ import annotations

# --query-gpu field names (nvidia-smi --help-query-gpu), and their documented aliases; then the
# fields of --query-compute-apps and --query-accounted-apps (--help-query-compute-apps, ...),
# whose headers print the same `timestamp`, `gpu_name`, `gpu_bus_id`, `gpu_uuid` names.
QUERY_FIELDS: dict[str, str | None] = {
    "timestamp": "_time",
    "index": "gpu_index",
    "name": "gpu_name", "gpu_name": "gpu_name",
    "pci.bus_id": "_bus", "gpu_bus_id": "_bus",
    "uuid": "_bus", "gpu_uuid": "_bus",
    "utilization.gpu": "util_gpu_pct",
    "utilization.memory": "util_mem_pct",
    "memory.used": "mem_used_mib",
    "memory.total": "mem_total_mib",
    "power.draw": "power_w", "power.draw.instant": "power_w", "power.draw.average": "power_w",
    "power.limit": "power_limit_w", "enforced.power.limit": "power_limit_w",
    "temperature.gpu": "temperature_c",
    "clocks.sm": "sm_clock_mhz", "clocks.current.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz", "clocks.current.memory": "mem_clock_mhz",
    "pstate": "pstate", "clocks_throttle_reasons.active": None,
    # Known fields without a column of their own.
    "memory.free": None, "memory.reserved": None, "fan.speed": None, "power.management": None,
    "power.default_limit": None, "power.min_limit": None, "power.max_limit": None,
    "clocks.gr": None, "clocks.current.graphics": None, "clocks.video": None,
    "clocks.current.video": None, "clocks.max.sm": None, "clocks.max.memory": None,
    "clocks.max.graphics": None, "temperature.memory": None, "driver_version": None,
    "count": None, "serial": None, "persistence_mode": None, "compute_mode": None,
    "pcie.link.gen.current": None, "pcie.link.width.current": None, "vbios_version": None,
    "utilization.encoder": None, "utilization.decoder": None, "display_mode": None,
    # --query-compute-apps / --query-accounted-apps: one row per process (`query.py`).
    "pid": "pid", "process_name": "process_name", "used_gpu_memory": "process_mem_mib",
    "max_memory_usage": "process_mem_mib", "gpu_serial": None, "vgpu_instance": None,
    "gpu_utilization": None, "mem_utilization": None, "time": None, "is_running": None,
}

# Aliases the per-process queries accept on the command line (`--query-compute-apps=pid,name,
# used_memory`); their headers print the canonical names. `name` is the GPU's in --query-gpu.
PROCESS_ALIASES = {"name": "process_name", "used_memory": "used_gpu_memory"}

# The fields only the per-process queries have: a header naming one is their output.
PROCESS_FIELDS = ("pid", "process_name", "used_gpu_memory", "max_memory_usage")
ACCOUNTED_FIELDS = ("max_memory_usage", "gpu_utilization", "mem_utilization", "time")

# Printed units -> factor to the base unit of the target column.
VALUE_UNITS: dict[str, float] = {
    "%": 1.0, "MiB": 1.0, "GiB": 1024.0, "KiB": 1.0 / 1024, "MB": 1.0,
    "W": 1.0, "mW": 1e-3, "MHz": 1.0, "GHz": 1e3, "C": 1.0,
}

# dmon columns (`# gpu pwr gtemp mtemp sm mem ...`); pmon's are per process.
MONITOR_FIELDS: dict[str, str | None] = {
    "gpu": "gpu_index",
    "Date": "_date", "Time": "_clock",
    "pwr": "power_w",
    "temp": "temperature_c", "gtemp": "temperature_c",
    "sm": "util_gpu_pct",
    "mem": "util_mem_pct",
    "mclk": "mem_clock_mhz",
    "pclk": "sm_clock_mhz",
    "fb": "mem_used_mib",          # framebuffer used; dmon prints MB, which are MiB
}

# `nvidia-smi -q`: "section/key" (or "key" at GPU level) -> column; the first the report
# prints wins when several driver generations' names feed one column.
REPORT_FIELDS: dict[str, str] = {
    "Product Name": "gpu_name",
    "Performance State": "pstate",
    "FB Memory Usage/Used": "mem_used_mib",
    "FB Memory Usage/Total": "mem_total_mib",
    "Utilization/Gpu": "util_gpu_pct",
    "Utilization/Memory": "util_mem_pct",
    "Temperature/GPU Current Temp": "temperature_c",
    "GPU Power Readings/Power Draw": "power_w",
    "GPU Power Readings/Instantaneous Power Draw": "power_w",
    "GPU Power Readings/Average Power Draw": "power_w",
    "Power Readings/Power Draw": "power_w",
    "GPU Power Readings/Current Power Limit": "power_limit_w",
    "GPU Power Readings/Power Limit": "power_limit_w",
    "Power Readings/Power Limit": "power_limit_w",
    "Power Readings/Enforced Power Limit": "power_limit_w",
    "Clocks/SM": "sm_clock_mhz",
    "Clocks/Memory": "mem_clock_mhz",
}

# Headers written by wrappers (pynvml scripts, shell loops that print their own header), after
# normalisation: lower case, units in brackets/parentheses dropped, `.`/space/`-` -> `_`.
# A wrapper CSV is read only when EVERY column is listed here and no target appears twice.
WRAPPER_NAMES: dict[str, str | None] = {
    **{k: "_time" for k in ("timestamp", "time", "datetime", "date_time", "ts")},
    **{k: "_elapsed" for k in ("elapsed", "elapsed_sec", "elapsed_s", "elapsed_time", "time_s")},
    **{k: "gpu_index" for k in ("gpu_index", "index", "gpu", "gpu_id", "index_gpu")},
    **{k: "gpu_name" for k in ("name", "gpu_name")},
    **{k: "util_gpu_pct" for k in ("utilization_gpu", "utilization_gpu_percent", "gpu_util",
                                   "gpu_util_pct", "gpu_util_percent", "gpu_utilization",
                                   "gpu_usage", "util_gpu")},
    **{k: "util_mem_pct" for k in ("utilization_memory", "memory_utilization", "memory_util",
                                   "mem_util", "mem_util_pct", "gpu_memory_utilization")},
    **{k: "mem_used_mib" for k in ("memory_used", "mem_used", "mem_used_mb", "mem_used_mib",
                                   "gpu_memory_used", "memory_used_mib", "memory_used_mb")},
    **{k: "mem_total_mib" for k in ("memory_total", "mem_total", "mem_total_mb", "mem_total_mib",
                                    "gpu_memory_total", "memory_total_mib", "memory_total_mb")},
    **{k: "power_w" for k in ("power_draw", "power", "power_w", "power_watts", "power_draw_w")},
    **{k: "power_limit_w" for k in ("power_limit", "power_limit_w")},
    **{k: "temperature_c" for k in ("temperature", "temperature_gpu", "temperature_c", "temp",
                                    "temp_c", "gpu_temp", "gpu_temperature")},
    **{k: "sm_clock_mhz" for k in ("clocks_sm", "clock_sm", "sm_clock", "clocks_current_sm")},
    **{k: "mem_clock_mhz" for k in ("clocks_mem", "mem_clock", "clocks_current_memory")},
    **{k: "_bus" for k in ("pci_bus_id", "uuid", "gpu_uuid")},
    **{k: None for k in ("memory_free", "mem_free", "gpu_memory_free", "mem_free_mb", "pstate",
                         "encoder_utilization", "decoder_utilization", "fan_speed",
                         "power_management")},
}

# Columns that are measurements (a wrapper must map at least one to be read).
MEASUREMENTS = ("util_gpu_pct", "util_mem_pct", "mem_used_mib", "mem_total_mib", "power_w",
                "power_limit_w", "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "process_mem_mib")


def query_kind(names: list[str]) -> str:
    """Which query printed a header with these fields: `--query-gpu`, `--query-compute-apps`
    or `--query-accounted-apps` (its variant name)."""
    if not any(name in PROCESS_FIELDS for name in names):
        return "query csv"
    if any(name in ACCOUNTED_FIELDS for name in names):
        return "accounted-apps csv"
    return "compute-apps csv"
