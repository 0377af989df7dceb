"""A rocpd SQLite database as rocprofv3 writes it by default from ROCm 7 (`<pid>_results.db`):
the tables of rocprofiler-sdk's `source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql` (each name
suffixed with the database's uuid), the unsuffixed views of `rocpd_views.sql` over them, and the
data views of `data_views.sql` that readers query (`kernels`, `memory_copies`, `regions`), as
that SQL writes them (the subset of columns and views this sample fills; the rest of the tables
are created empty). Values invented: a short BF16 training step of the MI300X sample's layers
(`samples.rocm.LAYER`) with its HIP API calls, copies and a roctx range per step."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from samples.gpus import rng_for
from samples.rocm import LAYER, MI300X, _steps

UUID = "_0000c3a1_9f2b_4e5d_8c7a_51d0e4a7b3f2"
GUID = "0000c3a1-9f2b-4e5d-8c7a-51d0e4a7b3f2"
_TABLES = {
    "rocpd_metadata": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "tag" TEXT NOT NULL, "value" TEXT NOT NULL',
    "rocpd_string": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "string" TEXT NOT NULL UNIQUE',
    "rocpd_info_node": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "hash" BIGINT NOT NULL UNIQUE, '
                       '"machine_id" TEXT NOT NULL UNIQUE, "name" TEXT, "system_name" TEXT, "hostname" TEXT, '
                       '"release" TEXT, "version" TEXT, "hardware_name" TEXT, "domain_name" TEXT',
    "rocpd_info_process": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                          '"ppid" INTEGER, "pid" INTEGER NOT NULL, "name" TEXT, "init" BIGINT, "fini" BIGINT, '
                          '"start" BIGINT, "end" BIGINT, "command" TEXT, "environment" JSONB DEFAULT "{}" NOT NULL, '
                          '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_thread": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                         '"ppid" INTEGER, "pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL, "name" TEXT, "start" BIGINT, '
                         '"end" BIGINT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_category": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "name" TEXT NOT NULL, '
                           '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_agent": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                        '"pid" INTEGER NOT NULL, "type" TEXT CHECK ("type" IN (\'CPU\', \'GPU\')), '
                        '"absolute_index" INTEGER, "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, '
                        '"name" TEXT, "generic_name" TEXT, "model_name" TEXT, "vendor_name" TEXT, "product_name" TEXT, '
                        '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_queue": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                        '"pid" INTEGER NOT NULL, "name" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_stream": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                         '"pid" INTEGER NOT NULL, "name" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_code_object": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                              '"pid" INTEGER NOT NULL, "agent_id" INTEGER, "uri" TEXT, "load_base" BIGINT, '
                              '"load_size" BIGINT, "load_delta" BIGINT, "storage_type" TEXT, '
                              '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_kernel_symbol": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
                                '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "code_object_id" INTEGER NOT NULL, '
                                '"kernel_name" TEXT, "display_name" TEXT, "kernel_object" INTEGER, '
                                '"kernarg_segment_size" INTEGER, "kernarg_segment_alignment" INTEGER, '
                                '"group_segment_size" INTEGER, "private_segment_size" INTEGER, "sgpr_count" INTEGER, '
                                '"arch_vgpr_count" INTEGER, "accum_vgpr_count" INTEGER, '
                                '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_track": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                   '"ppid" INTEGER, "pid" INTEGER, "tid" INTEGER, "agent_id" INTEGER, "queue_id" INTEGER, '
                   '"stream_id" INTEGER, "name_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_timestamp": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "value" BIGINT NOT NULL, '
                       '"phase" INTEGER CHECK ("phase" IN (0, 1, 2)), "track_id" INTEGER',
    "rocpd_event": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "category_id" INTEGER, '
                   '"stack_id" INTEGER, "parent_stack_id" INTEGER, "correlation_id" INTEGER, '
                   '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_pmc": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
                      '"pid" INTEGER NOT NULL, "agent_id" INTEGER, "target_arch" TEXT, "event_code" INT, '
                      '"instance_id" INTEGER, "name" TEXT NOT NULL, "symbol" TEXT NOT NULL, "description" TEXT, '
                      '"long_description" TEXT DEFAULT "", "component" TEXT, "units" TEXT DEFAULT "", '
                      '"value_type" TEXT, "block" TEXT, "expression" TEXT, "is_constant" INTEGER, "is_derived" INTEGER, '
                      '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_pmc_event": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "event_id" INTEGER, '
                       '"pmc_id" INTEGER NOT NULL, "value" REAL DEFAULT 0.0, "extdata" JSONB DEFAULT "{}"',
    "rocpd_region": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "track_id" INTEGER NOT NULL, '
                    '"name_id" INTEGER NOT NULL, "start_id" INTEGER NOT NULL, "end_id" INTEGER NOT NULL, '
                    '"event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_kernel_dispatch": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
                             '"track_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL, "dispatch_id" INTEGER NOT NULL, '
                             '"start_id" INTEGER NOT NULL, "end_id" INTEGER NOT NULL, "private_segment_size" INTEGER, '
                             '"group_segment_size" INTEGER, "workgroup_size_x" INTEGER NOT NULL, '
                             '"workgroup_size_y" INTEGER NOT NULL, "workgroup_size_z" INTEGER NOT NULL, '
                             '"grid_size_x" INTEGER NOT NULL, "grid_size_y" INTEGER NOT NULL, '
                             '"grid_size_z" INTEGER NOT NULL, "region_name_id" INTEGER, "event_id" INTEGER, '
                             '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_memory_copy": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
                         '"track_id" INTEGER NOT NULL, "start_id" INTEGER NOT NULL, "end_id" INTEGER NOT NULL, '
                         '"name_id" INTEGER NOT NULL, "dst_agent_id" INTEGER, "dst_address" INTEGER, '
                         '"src_agent_id" INTEGER, "src_address" INTEGER, "size" INTEGER NOT NULL, '
                         '"region_name_id" INTEGER, "event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
}
# data_views.sql (the columns this sample's readers use; `kernels` and the others as written there)
_VIEWS = """
CREATE VIEW `tracks` AS SELECT T.id, T.guid, T.name_id AS track_name_id, ST.string AS track_name, T.nid,
    N.hostname AS node_hostname, T.pid, P.command AS process_command, T.tid, T.agent_id, A.name AS agent_name,
    A.type AS agent_type, A.absolute_index AS agent_absolute_index, A.logical_index AS agent_logical_index,
    A.type_index AS agent_type_index, A.product_name AS agent_product_name, T.queue_id, Q.name AS queue_name,
    T.stream_id, S.name AS stream_name
  FROM `rocpd_track` T LEFT JOIN `rocpd_info_node` N ON N.id = T.nid AND N.guid = T.guid
    LEFT JOIN `rocpd_info_process` P ON P.pid = T.pid AND P.guid = T.guid
    LEFT JOIN `rocpd_info_agent` A ON A.id = T.agent_id AND A.guid = T.guid
    LEFT JOIN `rocpd_info_queue` Q ON Q.id = T.queue_id AND Q.guid = T.guid
    LEFT JOIN `rocpd_info_stream` S ON S.id = T.stream_id AND S.guid = T.guid
    LEFT JOIN `rocpd_string` ST ON ST.id = T.name_id AND ST.guid = T.guid;
CREATE VIEW `events` AS SELECT E.id, E.guid, E.category_id,
    (SELECT name FROM `rocpd_info_category` C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    E.stack_id, E.parent_stack_id, E.correlation_id, E.extdata FROM `rocpd_event` E;
CREATE VIEW `regions` AS SELECT R.id, R.guid, E.category, NS.string AS name, T.nid, T.pid, T.tid,
    DS.value AS `start`, DE.value AS `end`, (DE.value - DS.value) AS `duration`, R.event_id, R.track_id,
    E.stack_id, E.parent_stack_id, E.correlation_id, E.extdata
  FROM `rocpd_region` R INNER JOIN `events` E ON E.id = R.event_id AND E.guid = R.guid
    INNER JOIN `tracks` T ON T.id = R.track_id AND T.guid = R.guid
    INNER JOIN `rocpd_string` NS ON NS.id = R.name_id AND NS.guid = R.guid
    INNER JOIN `rocpd_timestamp` DS ON DS.id = R.start_id AND DS.guid = R.guid
    INNER JOIN `rocpd_timestamp` DE ON DE.id = R.end_id AND DE.guid = R.guid;
CREATE VIEW `kernels` AS SELECT K.id, K.guid, T.nid, T.pid, T.tid, E.category, R.string AS region,
    S.display_name AS name, T.agent_id, T.agent_absolute_index, T.agent_logical_index, T.agent_type_index,
    T.agent_type, S.code_object_id, K.kernel_id, K.dispatch_id, T.queue_id, T.queue_name AS `queue`, T.stream_id,
    T.stream_name AS `stream`, DS.value AS `start`, DE.value AS `end`, (DE.value - DS.value) AS `duration`,
    K.event_id, K.track_id, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
    K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
    K.workgroup_size_x AS block_size_x, K.workgroup_size_y AS block_size_y, K.workgroup_size_z AS block_size_z,
    (K.grid_size_x / K.workgroup_size_x) AS grid_size_x, (K.grid_size_y / K.workgroup_size_y) AS grid_size_y,
    (K.grid_size_z / K.workgroup_size_z) AS grid_size_z, K.group_segment_size AS lds_size,
    K.private_segment_size AS scratch_size, S.group_segment_size AS static_lds_size,
    S.private_segment_size AS static_scratch_size, S.sgpr_count, S.arch_vgpr_count, S.accum_vgpr_count,
    E.stack_id, E.parent_stack_id, E.correlation_id, E.extdata
  FROM `rocpd_kernel_dispatch` K INNER JOIN `tracks` T ON T.id = K.track_id AND T.guid = K.guid
    INNER JOIN `events` E ON E.id = K.event_id AND E.guid = K.guid
    INNER JOIN `rocpd_string` R ON R.id = K.region_name_id AND R.guid = K.guid
    INNER JOIN `rocpd_info_kernel_symbol` S ON S.id = K.kernel_id AND S.guid = K.guid
    INNER JOIN `rocpd_timestamp` DS ON DS.id = K.start_id AND DS.guid = K.guid
    INNER JOIN `rocpd_timestamp` DE ON DE.id = K.end_id AND DE.guid = K.guid;
CREATE VIEW `memory_copies` AS SELECT M.id, M.guid, T.nid, T.pid, T.tid, E.id AS event_id, E.category,
    NS.string AS name, R.string AS region_name, DS.value AS `start`, DE.value AS `end`,
    (DE.value - DS.value) AS `duration`, T.queue_id, T.queue_name, T.stream_id, T.stream_name, M.size,
    dst_agent.name AS dst_device, dst_agent.id AS dst_agent_id, dst_agent.absolute_index AS dst_agent_absolute_index,
    dst_agent.logical_index AS dst_agent_logical_index, dst_agent.type AS dst_agent_type, M.dst_address,
    src_agent.name AS src_device, src_agent.id AS src_agent_id, src_agent.absolute_index AS src_agent_absolute_index,
    src_agent.logical_index AS src_agent_logical_index, src_agent.type AS src_agent_type, M.src_address,
    E.stack_id, E.parent_stack_id, E.correlation_id, E.extdata
  FROM `rocpd_memory_copy` M INNER JOIN `events` E ON E.id = M.event_id AND E.guid = M.guid
    INNER JOIN `tracks` T ON T.id = M.track_id AND T.guid = M.guid
    INNER JOIN `rocpd_string` NS ON NS.id = M.name_id AND NS.guid = M.guid
    LEFT JOIN `rocpd_string` R ON R.id = M.region_name_id AND R.guid = M.guid
    INNER JOIN `rocpd_info_agent` dst_agent ON dst_agent.id = M.dst_agent_id AND dst_agent.guid = M.guid
    INNER JOIN `rocpd_info_agent` src_agent ON src_agent.id = M.src_agent_id AND src_agent.guid = M.guid
    INNER JOIN `rocpd_timestamp` DS ON DS.id = M.start_id AND DS.guid = M.guid
    INNER JOIN `rocpd_timestamp` DE ON DE.id = M.end_id AND DE.guid = M.guid;
CREATE VIEW `pmc_events` AS SELECT PMC_E.id, PMC_E.guid, PMC_E.pmc_id, PMC_E.event_id, E.category_id, E.category,
    PMC_I.name, PMC_I.symbol, PMC_E.value, PMC_I.agent_id, PMC_I.target_arch, PMC_I.block, PMC_I.is_derived
  FROM `rocpd_pmc_event` PMC_E INNER JOIN `rocpd_info_pmc` PMC_I ON PMC_I.id = PMC_E.pmc_id AND PMC_I.guid = PMC_E.guid
    INNER JOIN `events` E ON E.id = PMC_E.event_id AND E.guid = PMC_E.guid;
CREATE VIEW `kernel_pmc_events` AS SELECT K.id, K.guid, K.nid, K.pid, K.tid, K.category, K.region, K.name, K.agent_id,
    K.agent_logical_index, K.kernel_id, K.dispatch_id, K.start, K.end, K.duration, K.event_id, K.track_id,
    E.pmc_id, E.name AS `pmc_name`, E.symbol AS `pmc_symbol`, E.value AS `pmc_value`, E.agent_id AS `pmc_agent_id`,
    E.block AS `pmc_block`, E.is_derived AS `pmc_is_derived`
  FROM `kernels` K INNER JOIN `pmc_events` E ON E.event_id = K.event_id;
"""
# `rocprofv3 --pmc ...` counters, stored per dispatch in rocpd_pmc_event (the CSV sample's, FETCH_SIZE
# and WRITE_SIZE derived, in kilobytes)
COUNTERS = ["SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_TRANS_F32",
            "SQ_INSTS_VALU_MFMA_MOPS_BF16", "FETCH_SIZE", "WRITE_SIZE"]
PID, TID, HOST = 61_204, 61_204, "mi300x-node-12"
COMMAND = "python3 train.py --layers 1 --steps 2 --dtype bf16"


class _Db:
    def __init__(self, con: sqlite3.Connection):
        self.con, self.strings, self.categories = con, {}, {}

    def insert(self, table: str, **values) -> int:
        if table != "rocpd_metadata":
            values.setdefault("guid", GUID)
        names = ", ".join(f'"{k}"' for k in values)
        marks = ", ".join("?" for _ in values)
        return self.con.execute(f"INSERT INTO `{table}{UUID}` ({names}) VALUES ({marks})", list(values.values())).lastrowid

    def string(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = self.insert("rocpd_string", string=text)
        return self.strings[text]

    def event(self, category: str, correlation: int) -> int:
        if category not in self.categories:
            self.categories[category] = self.insert("rocpd_info_category", name=category)
        return self.insert("rocpd_event", category_id=self.categories[category], correlation_id=correlation, stack_id=correlation)

    def span(self, track: int, begin: int, end: int) -> tuple[int, int]:
        return (self.insert("rocpd_timestamp", value=begin, phase=1, track_id=track),
                self.insert("rocpd_timestamp", value=end, phase=2, track_id=track))


def rocpd_bytes() -> bytes:
    """The database's bytes (512-byte pages: a small file for sample_logs)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.db"
        con = sqlite3.connect(path)
        con.execute("PRAGMA page_size = 512")
        con.execute("PRAGMA journal_mode = OFF")
        for name, columns in _TABLES.items():
            con.execute(f"CREATE TABLE `{name}{UUID}` ({columns})")
            con.execute(f"CREATE VIEW `{name}` AS SELECT * FROM `{name}{UUID}`")
        con.executescript(_VIEWS)
        _fill(_Db(con))
        con.commit()
        con.execute("VACUUM")
        con.close()
        return path.read_bytes()


def _fill(db: _Db) -> None:
    rng = rng_for("amd/mi300x/rocpd")
    db.insert("rocpd_metadata", tag="schema_version", value="3")
    db.insert("rocpd_metadata", tag="uuid", value=UUID)
    node = db.insert("rocpd_info_node", hash=7_312_004_118, machine_id="5e0f9c1a77d24b6b9a3c0d2e4f6a8b10",
                     system_name="Linux", hostname=HOST, release="5.15.0-126-generic", hardware_name="x86_64")
    db.insert("rocpd_info_process", nid=node, ppid=61_188, pid=PID, init=0, fini=0, command=COMMAND)
    db.insert("rocpd_info_thread", nid=node, ppid=61_188, pid=PID, tid=TID, name="python3")
    cpu = db.insert("rocpd_info_agent", nid=node, pid=PID, type="CPU", absolute_index=0, logical_index=0, type_index=0,
                    name="AMD EPYC 9654 96-Core Processor", generic_name="CPU", model_name="",
                    vendor_name="CPU", product_name="AMD EPYC 9654 96-Core Processor")
    gpu = db.insert("rocpd_info_agent", nid=node, pid=PID, type="GPU", absolute_index=2, logical_index=2, type_index=0,
                    name=MI300X.gfx, generic_name="gfx942", model_name="aqua_vanjaram", vendor_name="AMD",
                    product_name=MI300X.name)
    queue = db.insert("rocpd_info_queue", nid=node, pid=PID, name="Queue 1")
    stream = db.insert("rocpd_info_stream", nid=node, pid=PID, name="Stream 0")
    code = db.insert("rocpd_info_code_object", nid=node, pid=PID, agent_id=gpu, uri="file:///opt/app/libtrain.so#offset=0",
                     storage_type="FILE")
    host = db.insert("rocpd_track", nid=node, pid=PID, tid=TID, name_id=db.string("THREAD 0"))
    device = db.insert("rocpd_track", nid=node, pid=PID, tid=TID, agent_id=gpu, queue_id=queue, stream_id=stream,
                       name_id=db.string("Agent 2"))
    copies = db.insert("rocpd_track", nid=node, pid=PID, tid=TID, stream_id=stream, name_id=db.string("MEMORY_COPY"))
    pmc = {name: db.insert("rocpd_info_pmc", nid=node, pid=PID, agent_id=gpu, target_arch="GPU", name=name, symbol=name,
                           block="SQ" if name.startswith("SQ_") else "", is_derived=int(not name.startswith("SQ_")),
                           value_type="ABS") for name in COUNTERS}
    symbols: dict[str, int] = {}
    for kernel in LAYER:
        if kernel.name not in symbols:
            symbols[kernel.name] = db.insert(
                "rocpd_info_kernel_symbol", nid=node, pid=PID, code_object_id=code, kernel_name=kernel.name + ".kd",
                display_name=kernel.name, group_segment_size=kernel.lds, private_segment_size=0,
                sgpr_count=kernel.sgpr, arch_vgpr_count=kernel.vgpr, accum_vgpr_count=kernel.accum_vgpr)
    start = 5_210_733_902_118_004
    correlation = 1
    for index, size in enumerate((262_144_000, 31_457_280)):
        begin = start - 12_000_000 + index * 4_100_000
        length = round(size / 52e9 * 1e9)
        api = db.event("HIP_RUNTIME_API", correlation)
        t0, t1 = db.span(host, begin - 9_000, begin + length + 4_000)
        db.insert("rocpd_region", track_id=host, name_id=db.string("hipMemcpyAsync"), start_id=t0, end_id=t1, event_id=api)
        event = db.event("MEMORY_COPY", correlation)
        c0, c1 = db.span(copies, begin, begin + length)
        db.insert("rocpd_memory_copy", track_id=copies, start_id=c0, end_id=c1,
                  name_id=db.string("MEMORY_COPY_HOST_TO_DEVICE"), dst_agent_id=gpu, src_agent_id=cpu, size=size,
                  region_name_id=db.string("hipMemcpyAsync"), event_id=event)
        correlation += 1
    launches = _steps(rng, LAYER, 2, MI300X, start)
    per_step = len(LAYER)
    for step in range(2):
        first, last = launches[step * per_step], launches[step * per_step + per_step - 1]
        marker = db.event("MARKER_CORE_API", correlation)
        m0, m1 = db.span(host, first[1] - 60_000, last[2] + 8_000)
        db.insert("rocpd_region", track_id=host, name_id=db.string(f"step {step}"), start_id=m0, end_id=m1, event_id=marker)
        correlation += 1
    for dispatch, (kernel, begin, end) in enumerate(launches, start=1):
        call = "hipExtModuleLaunchKernel" if kernel.name.startswith("Cijk_") else "hipLaunchKernel"
        api = db.event("HIP_RUNTIME_API", correlation)
        t0, t1 = db.span(host, begin - 9_000 - rng.randint(0, 3_000), begin - 4_000)
        db.insert("rocpd_region", track_id=host, name_id=db.string(call), start_id=t0, end_id=t1, event_id=api)
        event = db.event("KERNEL_DISPATCH", correlation)
        k0, k1 = db.span(device, begin, end)
        db.insert("rocpd_kernel_dispatch", track_id=device, kernel_id=symbols[kernel.name], dispatch_id=dispatch,
                  start_id=k0, end_id=k1, private_segment_size=0, group_segment_size=kernel.lds,
                  workgroup_size_x=kernel.block, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=kernel.grid,
                  grid_size_y=1, grid_size_z=1, region_name_id=db.string(call), event_id=event)
        values = kernel.counters()
        values.update(FETCH_SIZE=values["read_64b"] * 64 / 1024, WRITE_SIZE=values["write_64b"] * 64 / 1024)
        for name in COUNTERS:
            db.insert("rocpd_pmc_event", event_id=event, pmc_id=pmc[name], value=float(values[name]))
        correlation += 1


def files() -> dict[str, bytes]:
    return {f"amd/mi300x/rocm7/llama3-8b/{PID}_results.db": rocpd_bytes()}
