"""DCGM fields as data: which field, under any of its spellings, feeds which `samples` column.

A DCGM field has a numeric id (`155`), a tag (`power_usage`, what `dcgmi dmon -l` lists as its
long name and field-watch scripts write), a short name (`POWER`, the `dcgmi dmon` column title)
and a C name (`DCGM_FI_DEV_POWER_USAGE`, dcgm-exporter's metric name; DCGM 4.x renamed some,
`DCGM_FI_DEV_BOARD_POWER_WATTS`, and kept the old names as aliases). The ids, tags, short names
and units are NVIDIA's, from DCGM's field table (`dcgm_fields.h`, `dcgmi dmon -l`); they did
not change from DCGM 1.7 to 4.x.

Each field maps to a column and a factor to its base unit: the profiling ratios (`SMACT`
0.0-1.0) become %. Fields that are known but have no column are listed with `None`; a field in
neither list is reported once per file (`dcgm.unknown-field`), never guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    field_id: int
    tag: str              # dcgmi dmon -l "Long Name"
    short: str            # dcgmi dmon column title
    names: tuple[str, ...]   # DCGM_FI_ C names (the first is DCGM 1.x-3.x's)
    column: str | None    # samples column, None: known, not kept
    factor: float = 1.0   # to the column's base unit


# Fields read into `samples`. When two feed one column (POWER and POWINST), the first listed
# that a row has wins.
FIELDS: tuple[Field, ...] = (
    Field(50, "name", "DVNAM", ("DCGM_FI_DEV_NAME", "DCGM_FI_DEV_GPU_NAME"), "gpu_name"),
    Field(54, "uuid", "UUID#", ("DCGM_FI_DEV_UUID", "DCGM_FI_DEV_GPU_UUID"), "_uuid"),
    Field(203, "gpu_utilization", "GPUTL", ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"),
          "util_gpu_pct"),
    Field(204, "mem_copy_utilization", "MCUTL", ("DCGM_FI_DEV_MEM_COPY_UTIL",), "util_mem_pct"),
    Field(252, "fb_used", "FBUSD", ("DCGM_FI_DEV_FB_USED",), "mem_used_mib"),
    Field(250, "fb_total", "FBTTL", ("DCGM_FI_DEV_FB_TOTAL",), "mem_total_mib"),
    Field(155, "power_usage", "POWER", ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS"),
          "power_w"),
    Field(157, "power_usage_instant", "POWINST",
          ("DCGM_FI_DEV_POWER_USAGE_INSTANT", "DCGM_FI_DEV_BOARD_POWER_RAW_WATTS"), "power_w"),
    Field(164, "enforced_power_limit", "EPLMT",
          ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS"),
          "power_limit_w"),
    Field(160, "power_management_limit", "PMLMT",
          ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS"),
          "power_limit_w"),
    Field(150, "gpu_temp", "TMPTR", ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"),
          "temperature_c"),
    Field(100, "sm_clock", "SMCLK", ("DCGM_FI_DEV_SM_CLOCK",), "sm_clock_mhz"),
    Field(101, "memory_clock", "MMCLK", ("DCGM_FI_DEV_MEM_CLOCK",), "mem_clock_mhz"),
    Field(190, "pstate", "PSTAT", ("DCGM_FI_DEV_PSTATE", "DCGM_FI_DEV_GPU_PSTATE"), "_pstate"),
    Field(1002, "sm_active", "SMACT", ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO"),
          "sm_active_pct", 100.0),
    Field(1003, "sm_occupancy", "SMOCC", ("DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO"),
          "sm_occupancy_pct", 100.0),
    Field(1004, "tensor_active", "TENSO",
          ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO"), "tensor_active_pct", 100.0),
    Field(1005, "dram_active", "DRAMA", ("DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO"),
          "dram_active_pct", 100.0),
    # Known, no column of their own (other engines, limits, counters, pipes, links).
    Field(1001, "gr_engine_active", "GRACT",
          ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"), None),
    Field(1006, "fp64_active", "FP64A", ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_FP64_UTIL_RATIO"), None),
    Field(1007, "fp32_active", "FP32A", ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_FP32_UTIL_RATIO"), None),
    Field(1008, "fp16_active", "FP16A", ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_FP16_UTIL_RATIO"), None),
    Field(1009, "pcie_tx_bytes", "PCITX", ("DCGM_FI_PROF_PCIE_TX_BYTES",), None),
    Field(1010, "pcie_rx_bytes", "PCIRX", ("DCGM_FI_PROF_PCIE_RX_BYTES",), None),
    Field(1011, "nvlink_tx_bytes", "NVLTX", ("DCGM_FI_PROF_NVLINK_TX_BYTES",), None),
    Field(1012, "nvlink_rx_bytes", "NVLRX", ("DCGM_FI_PROF_NVLINK_RX_BYTES",), None),
    Field(1013, "tensor_imma_active", "TIMMA", ("DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE",), None),
    Field(1014, "tensor_hmma_active", "THMMA", ("DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE",), None),
    Field(1015, "tensor_dfma_active", "TDFMA", ("DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE",), None),
    Field(1016, "integer_active", "INTAC", ("DCGM_FI_PROF_PIPE_INT_ACTIVE",), None),
    Field(140, "memory_temp", "MMTMP", ("DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS"), None),
    Field(156, "total_energy_consumption", "TOTEC", ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",), None),
    Field(251, "fb_free", "FBFRE", ("DCGM_FI_DEV_FB_FREE",), None),
    Field(253, "fb_resv", "FBRSV", ("DCGM_FI_DEV_FB_RESERVED",), None),
    Field(254, "fb_USDP", "FBUSP", ("DCGM_FI_DEV_FB_USED_PERCENT",), None),
    Field(206, "enc_utilization", "ECUTL", ("DCGM_FI_DEV_ENC_UTIL",), None),
    Field(207, "dec_utilization", "DCUTL", ("DCGM_FI_DEV_DEC_UTIL",), None),
    Field(102, "video_clock", "VICLK", ("DCGM_FI_DEV_VIDEO_CLOCK",), None),
    Field(110, "sm_app_clock", "SACLK", ("DCGM_FI_DEV_APP_SM_CLOCK",), None),
    Field(111, "mem_app_clock", "MACLK", ("DCGM_FI_DEV_APP_MEM_CLOCK",), None),
    Field(112, "current_clock_throttle_reasons", "DVCCTR",
          ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"), None),
    Field(113, "sm_max_clock", "SMMAX", ("DCGM_FI_DEV_MAX_SM_CLOCK",), None),
    Field(114, "memory_max_clock", "MMMAX", ("DCGM_FI_DEV_MAX_MEM_CLOCK",), None),
    Field(191, "fan_speed", "FANSP", ("DCGM_FI_DEV_FAN_SPEED",), None),
    Field(202, "pcie_replay_counter", "RPCTR", ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",), None),
    Field(230, "xid_errors", "XIDER", ("DCGM_FI_DEV_XID_ERRORS",), None),
    Field(240, "power_violation", "PVIOL", ("DCGM_FI_DEV_POWER_VIOLATION",), None),
    Field(241, "thermal_violation", "TVIOL", ("DCGM_FI_DEV_THERMAL_VIOLATION",), None),
    Field(57, "pci_busid", "PCBID", ("DCGM_FI_DEV_PCI_BUSID", "DCGM_FI_DEV_PCI_BUS_ID"), None),
    Field(1, "driver_version", "DRVER", ("DCGM_FI_DRIVER_VERSION",), None),
    # ... and the rest of dcgm-exporter's default counters (etc/default-counters.csv).
    *(Field(field_id, tag, short, (f"DCGM_FI_DEV_{name}",), None) for field_id, tag, short, name in (
        (200, "pcie_tx_throughput", "TXTPT", "PCIE_TX_THROUGHPUT"),
        (201, "pcie_rx_throughput", "RXTPT", "PCIE_RX_THROUGHPUT"),
        (449, "nvlink_bandwidth_total", "NBWLT", "NVLINK_BANDWIDTH_TOTAL"),
        (526, "vgpu_instance_license_status", "VLCST", "VGPU_LICENSE_STATUS"),
        (393, "uncorrectable_remapped_rows", "URMPS", "UNCORRECTABLE_REMAPPED_ROWS"),
        (394, "correctable_remapped_rows", "CRMPS", "CORRECTABLE_REMAPPED_ROWS"),
        (395, "row_remap_failure", "RRF", "ROW_REMAP_FAILURE"),
        (310, "ecc_sbe_volatile_total", "ESVTL", "ECC_SBE_VOL_TOTAL"),
        (311, "ecc_dbe_volatile_total", "EDVTL", "ECC_DBE_VOL_TOTAL"),
        (312, "ecc_sbe_aggregate_total", "ESATL", "ECC_SBE_AGG_TOTAL"),
        (313, "ecc_dbe_aggregate_total", "EDATL", "ECC_DBE_AGG_TOTAL"),
        (390, "retired_pages_sbe", "RPSBE", "RETIRED_SBE"),
        (391, "retired_pages_dbe", "RPDBE", "RETIRED_DBE"),
        (392, "retired_pages_pending", "RPPEN", "RETIRED_PENDING"),
        (242, "sync_boost_violation", "SBVIO", "SYNC_BOOST_VIOLATION"),
        (243, "board_limit_violation", "BLVIO", "BOARD_LIMIT_VIOLATION"),
        (244, "low_util_violation", "LUVIO", "LOW_UTIL_VIOLATION"),
        (245, "reliability_violation", "RVIOL", "RELIABILITY_VIOLATION"),
        (246, "app_clock_violation", "TAPCV", "TOTAL_APP_CLOCKS_VIOLATION"),
        (247, "base_clock_violation", "TAPBC", "TOTAL_BASE_CLOCKS_VIOLATION"),
        (409, "nvlink_flit_crc_error_count_total", "NFELT", "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"),
        (419, "nvlink_data_crc_error_count_total", "NDELT", "NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),
        (429, "nvlink_replay_error_count_total", "NRELT", "NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
        (439, "nvlink_recovery_error_count_total", "NRCLT", "NVLINK_RECOVERY_ERROR_COUNT_TOTAL"),
        (158, "slowdown_temp", "SDTMP", "SLOWDOWN_TEMP"),
        (159, "shutdown_temp", "SHTMP", "SHUTDOWN_TEMP"),
        (161, "power_management_limit_min", "PMMIN", "POWER_MGMT_LIMIT_MIN"),
        (162, "power_management_limit_max", "PMMAX", "POWER_MGMT_LIMIT_MAX"),
        (163, "power_management_limit_default", "PMDEF", "POWER_MGMT_LIMIT_DEF"),
    )),
)

# Field names scripts write that are not DCGM's own spellings but say which field they hold:
# the decoded clock-throttle bits of DCGM's sample programs (`throttle_reason_idle`, ...).
SCRIPT_PREFIXES_NOT_KEPT = ("throttle_reason_", "clocks_event_reason_")

# DCGM writes a blank (no reading) as a sentinel: int32 0x7ffffff0.., int64 0x7ffffffffffffff0..
# and 2**47 for doubles. No value of a kept field comes near them (a few thousand W, MHz, MiB).
BLANK_AT_OR_ABOVE = 2147483632.0


def _index() -> dict[str, Field]:
    found: dict[str, Field] = {}
    for field in FIELDS:
        for key in (str(field.field_id), field.tag.lower(), field.short.lower(),
                    *(name.lower() for name in field.names)):
            found.setdefault(key, field)
    return found


_BY_KEY = _index()


def lookup(key: str) -> Field | None:
    """The field a dmon title, tag, id or `DCGM_FI_` name spells (any case), or None."""
    return _BY_KEY.get(key.strip().lower())


def known_not_kept(key: str) -> bool:
    """A spelling of something DCGM watches that has no column (it is not reported)."""
    field = lookup(key)
    if field is not None:
        return field.column is None
    return key.strip().lower().startswith(SCRIPT_PREFIXES_NOT_KEPT)
