"""A distributed training job for `sample_logs/`: ResNet-50 trained with DistributedDataParallel
on four A100 GPUs of one node, profiled with `torch.profiler` on every rank, one Kineto trace per
rank (`ddp_4rank/resnet50_rank-N.pt.trace.json`), as `tensorboard_trace_handler` writes them with
a worker name per rank.

Each trace is Kineto's multi-rank layout: `deviceProperties` (the rank's own GPU),
`distributedInfo` (backend nccl, rank, world size 4, the default process group), three
`ProfilerStep#N`, and per step: the batch's `Memcpy HtoD`, forward and backward convolution
kernels on the compute stream, one gradient all-reduce (`record_param_comms` and
`nccl:all_reduce` on the CPU, `ncclDevKernel_AllReduce_Sum_f32_RING_LL` on the NCCL stream with
the collective's args: `Collective name`, `In msg nelems`, `Out msg nelems`, `Group size`,
`dtype`), the fused SGD step, and the loss's `Memcpy DtoH`.

The story: rank 3's GPU runs its kernels 30 % slower than the others (a throttled GPU). The
all-reduce starts on each rank when its gradient bucket is ready (after the third of four
backward kernels, so it overlaps the last one) and ends on every rank at once, when the last
rank arrived and the transfer (800 us for 102 MB: 192 GB/s of bus bandwidth) is done: ranks
0-2 wait for rank 3 inside the all-reduce kernel, and every rank's step takes as long as rank
3's. Every number is invented; written deterministically (no clock, no randomness).
"""

from __future__ import annotations

import json

FOLDER = "ddp_4rank"
WORLD = 4
STEPS = range(3, 6)                 # ProfilerStep#3..#5 (the schedule's wait and warm-up before)
T0 = 8_112_500_000.0                # us: the node's clock at the first event (all ranks share it)
SLOWDOWN = {0: 1.0, 1: 1.01, 2: 0.99, 3: 1.3}   # each rank's kernel times against rank 0's
STEP_JITTER = (1.0, 1.004, 0.997)
PARAMS = 25_557_032                 # ResNet-50's parameters: the gradient all-reduced each step
TRANSFER_US = 800.0                 # the all-reduce's transfer once every rank has arrived
LAUNCH_US = 5.0
GPU_NAME = "NVIDIA A100-SXM4-80GB"
INPUT_BYTES = 64 * 3 * 224 * 224 * 4
_FPROP = ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4"
          "_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn")
_DGRAD = ("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4"
          "_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn")
_WGRAD = ("sm80_xmma_wgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4"
          "_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn")
_BN = ("void cudnn::bn_fw_tr_1C11_singleread_spec<float, 512, true, 1, 2, 0>(cudnnTensorStruct, float const*, "
       "cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)")
_ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
_SGD = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
        "TensorListMetadata<3>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 3>>")
# (kernel, us on rank 0) of one step, in stream order
FORWARD = [(_FPROP, 3300.0), (_BN, 1350.0), (_FPROP, 5500.0), (_FPROP, 1800.0)]
BACKWARD = [(_DGRAD, 6800.0), (_WGRAD, 7100.0), (_DGRAD, 5200.0), (_WGRAD, 5000.0)]
BUCKET_READY = 3                    # the all-reduce may start after this many backward kernels
OPTIMIZER_US = 900.0
COMPUTE_STREAM, NCCL_STREAM = 7, 20


def _collective_args(rank: int) -> dict:
    """What PyTorch records of the all-reduce (`record_param_comms`), on the kernel too."""
    return {"Collective name": "allreduce", "In msg nelems": PARAMS, "Out msg nelems": PARAMS,
            "Group size": WORLD, "dtype": "Float", "In split size": "[]", "Out split size": "[]",
            "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2, 3]", "Rank": rank}


class _Rank:
    """One rank's trace as it is written: CPU events, flows and GPU events."""

    def __init__(self, rank: int):
        self.rank = rank
        self.pid = 31000 + rank
        self.cpu: list[dict] = []
        self.gpu: list[dict] = []
        self.external = 0
        self.correlation = 1000
        self.free = {COMPUTE_STREAM: T0, NCCL_STREAM: T0}

    def op(self, name: str, cat: str, ts: float, dur: float, **args) -> dict:
        self.external += 1
        event = {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.pid, "ts": round(ts, 3),
                 "dur": round(dur, 3), "args": {"External id": self.external, **args}}
        self.cpu.append(event)
        return event

    def launch(self, ts: float, name: str, cat: str, dur: float, stream: int = COMPUTE_STREAM,
               not_before: float = 0.0, **args) -> float:
        """A CUDA call at `ts` and the GPU work it queues on `stream`; returns the work's end."""
        self.correlation += 1
        call = "cudaLaunchKernel" if cat == "kernel" else "cudaMemcpyAsync"
        self.cpu.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": self.pid, "tid": self.pid,
                         "ts": round(ts, 3), "dur": LAUNCH_US,
                         "args": {"External id": self.external, "correlation": self.correlation}})
        start = max(self.free[stream], ts + LAUNCH_US + 2.0, not_before)
        self.gpu.append({"ph": "X", "cat": cat, "name": name, "pid": self.rank, "tid": stream,
                         "ts": round(start, 3), "dur": round(dur, 3),
                         "args": {"External id": self.external, "device": self.rank, "context": 1,
                                  "stream": stream, "correlation": self.correlation, **args}})
        self.free[stream] = start + dur + 1.0
        return start + dur


def _kernel(grid: int) -> dict:
    return {"queued": 0, "registers per thread": 128, "shared memory": 49152, "grid": [grid, 1, 1],
            "block": [256, 1, 1]}


def _compute_until_bucket(rank: _Rank, step_start: float, jitter: float) -> tuple[float, float]:
    """The step's copy, forward and first backward kernels: (when the CPU reaches the
    all-reduce, when the gradient bucket is ready on the GPU)."""
    scale = SLOWDOWN[rank.rank] * jitter
    now = step_start + 6.0
    rank.op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "user_annotation", now, 180.0)
    now += 190.0
    rank.launch(now, "Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", INPUT_BYTES / 24.0e3, bytes=INPUT_BYTES)
    now += LAUNCH_US + 4.0
    for phase, kernels in (("forward", FORWARD), ("backward", BACKWARD[:BUCKET_READY])):
        rank.op(phase, "user_annotation", now, LAUNCH_US * len(kernels) + 10.0)
        for name, micros in kernels:
            ready = rank.launch(now, name, "kernel", micros * scale, **_kernel(432))
            now += LAUNCH_US + 2.0
        now += 10.0
    return now, ready


def _finish_step(rank: _Rank, now: float, ready: float, reduced: float, jitter: float, step: dict) -> float:
    """The all-reduce's launch (its kernel from `ready`, when the rank's bucket is, to
    `reduced` on every rank), the last backward kernels, the optimizer and the loss's copy
    back; returns when the CPU's step ends."""
    scale = SLOWDOWN[rank.rank] * jitter
    args = _collective_args(rank.rank)
    rank.op("record_param_comms", "cpu_op", now, 24.0, **args)
    rank.op("nccl:all_reduce", "user_annotation", now + 2.0, 20.0)
    rank.launch(now + 4.0, _ALL_REDUCE, "kernel", reduced - ready, stream=NCCL_STREAM, not_before=ready,
                **{**_kernel(32), "registers per thread": 96, **args})
    now += 30.0
    for name, micros in BACKWARD[BUCKET_READY:]:
        rank.launch(now, name, "kernel", micros * scale, **_kernel(432))
        now += LAUNCH_US + 2.0
    rank.op("Optimizer.step#SGD.step", "user_annotation", now, 40.0)
    rank.launch(now + 10.0, _SGD, "kernel", OPTIMIZER_US * scale, not_before=reduced + 15.0, **_kernel(1280))
    loss_back = rank.launch(now + 50.0, "Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 2.0, bytes=4)
    end = loss_back + 20.0
    step["dur"] = round(end - step["ts"], 3)
    return end


def traces() -> list[_Rank]:
    ranks = [_Rank(number) for number in range(WORLD)]
    starts = [T0 + 50.0 + 3.0 * number for number in range(WORLD)]
    for step_number, jitter in zip(STEPS, STEP_JITTER):
        steps = [rank.op(f"ProfilerStep#{step_number}", "user_annotation", start, 0.0)
                 for rank, start in zip(ranks, starts)]
        reached = [_compute_until_bucket(rank, start, jitter) for rank, start in zip(ranks, starts)]
        # Every rank's all-reduce ends when the last rank has arrived and the data has moved.
        reduced = max(ready for _, ready in reached) + TRANSFER_US
        ends = [_finish_step(rank, now, ready, reduced, jitter, step)
                for rank, (now, ready), step in zip(ranks, reached, steps)]
        starts = [end + 40.0 + 2.0 * rank.rank for rank, end in zip(ranks, ends)]
    return ranks


def _event_text(event: dict) -> str:
    head = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in event.items() if k != "args")
    if "args" not in event:
        return "  {\n    " + head + "\n  }"
    args = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in event["args"].items())
    return "  {\n    " + head + ",\n    \"args\": {\n      " + args + "\n    }\n  }"


def _metadata(rank: _Rank) -> list[dict]:
    meta = [("process_name", rank.pid, 0, {"name": "python3"}), ("process_labels", rank.pid, 0, {"labels": "CPU"}),
            ("process_name", rank.rank, 0, {"name": "python3"}),
            ("process_labels", rank.rank, 0, {"labels": f"GPU {rank.rank}"}),
            ("thread_name", rank.pid, rank.pid, {"name": f"thread {rank.pid} (python3)"}),
            ("thread_name", rank.rank, COMPUTE_STREAM, {"name": f"stream {COMPUTE_STREAM} "}),
            ("thread_name", rank.rank, NCCL_STREAM, {"name": f"stream {NCCL_STREAM} "})]
    return [{"name": name, "ph": "M", "ts": T0, "pid": pid, "tid": tid, "args": args}
            for name, pid, tid, args in meta]


def trace_text(rank: _Rank) -> str:
    device = {"id": rank.rank, "name": GPU_NAME, "totalGlobalMem": 85097971712, "computeMajor": 8,
              "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
              "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108,
              "sharedMemPerMultiprocessor": 167936, "regsPerMultiprocessor": 65536}
    info = {"backend": "nccl", "rank": rank.rank, "world_size": WORLD, "pg_count": 1,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                           "pg_size": WORLD, "ranks": list(range(WORLD))}], "nccl_version": "2.20.5"}
    head = ["{", '  "schemaVersion": 1,', '  "deviceProperties": [',
            "    {" + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in device.items()) + "}", "  ],",
            f'  "distributedInfo": {json.dumps(info)},', '  "record_shapes": 0,', '  "with_stack": 0,',
            '  "cuda_runtime_version": 12040,', '  "cuda_driver_version": 12040,', '  "displayTimeUnit": "ms",',
            '  "baseTimeNanoseconds": 1732495000000000000,', '  "traceEvents": [']
    events = _metadata(rank) + rank.cpu + rank.gpu
    tail = ["  ],", f'  "traceName": "resnet50_rank-{rank.rank}.pt.trace.json"', "}"]
    return "\n".join(head) + "\n" + ",\n".join(_event_text(e) for e in events) + "\n" + "\n".join(tail) + "\n"


def files() -> dict[str, str]:
    return {f"{FOLDER}/resnet50_rank-{rank.rank}.pt.trace.json": trace_text(rank) for rank in traces()}
