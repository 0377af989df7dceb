"""PyTorch profiler samples for `sample_logs/`: one small training job profiled with
`torch.profiler` on the A100, as two files beside each other (one run, `a100/lenet5/`):

* `trace.json`: the Kineto trace `prof.export_chrome_trace("trace.json")` writes (the same
  layout as `tensorboard_trace_handler`'s `{host}_{pid}.{ms}.pt.trace.json`), schemaVersion 1 with
  `deviceProperties`, in Kineto's own layout (one key per line at the top, one event over a few
  lines): three `ProfilerStep#N`, each with `forward` / `backward` record_function ranges and
  `Optimizer.step#SGD.step`, nested `cpu_op`s launching kernels through `cudaLaunchKernel`
  (correlation ids and `ac2g` flows), `gpu_user_annotation` spans, the batch's `Memcpy HtoD`,
  a `Memset` and the loss's `Memcpy DtoH`;
* `output.log`: the script's output with `prof.key_averages().table(sort_by="cuda_time_total",
  row_limit=20)` computed from the same events, laid out as torch's `_build_table` prints it
  (names cut at 55 characters with `...`, times in us/ms, the `time total` lines).

LeNet-5 at batch 256 on MNIST: every number is invented; the kernel names are the ones
PyTorch, cuDNN and cuBLAS use on Ampere. Written deterministically (no clock, no randomness).
"""

from __future__ import annotations

import json

FOLDER = "a100/lenet5"
TRACE_NAME = "trace.json"
PID, TID = 4242, 4242
T0 = 5_412_300_100.0          # us: Kineto's clock at the first event (arbitrary origin)
STEPS = 3
DEVICE = {"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42298834944,
          "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024,
          "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
          "sharedMemPerBlock": 49152, "numSms": 108, "regsPerMultiprocessor": 65536,
          "sharedMemPerBlockOptin": 166912, "sharedMemPerMultiprocessor": 167936}

_EW = "void at::native::vectorized_elementwise_kernel<4, {}, at::detail::Array<char*, {}> >(int, {}, at::detail::Array<char*, {}>)"


def _ew(functor: str, arrays: int) -> str:
    return _EW.format(functor, arrays, functor, arrays)


_RELU = _ew("at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}", 2)
_POOL = "void at::native::(anonymous namespace)::max_pool_forward_nchw<float>(int, float const*, long, long, long, int, int, int, int, int, int, int, int, int, int, float*, long*)"
_CONV = "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nchwkcrs_nchw_tilesize64x32x64_stage5_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel__5x_cudnn"
_DGRAD = "sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nchwkcrs_nchw_tilesize64x32x64_stage5_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn"
_WGRAD = "sm80_xmma_wgrad_implicit_gemm_tf32f32_tf32f32_f32_nchwkcrs_nchw_tilesize64x64x32_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn"
_GEMM = "ampere_sgemm_32x32_sliced1x4_tn"
_GEMM_NN = "ampere_sgemm_32x32_sliced1x4_nn"
_SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"
_NLL = "void nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"
_NLL_BWD = "void nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)"
_SGD = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<3>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 3>, double, float*, float*, double, double, bool, bool, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<3>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 3>, double, float*, float*, double, double, bool, bool, bool, float*, float*)"

# One step: (range, operator stack, kernel, grid, block, kernel time in us, CPU time in us).
_CONV_OPS = ("aten::conv2d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution")
_LINEAR_OPS = ("aten::linear", "aten::addmm")
STEP = [
    ("forward", _CONV_OPS, _CONV, (98, 1, 1), (128, 1, 1), 41.216, 38.1),
    ("forward", ("aten::relu", "aten::clamp_min"), _RELU, (4704, 1, 1), (128, 1, 1), 12.352, 9.4),
    ("forward", ("aten::max_pool2d", "aten::max_pool2d_with_indices"), _POOL, (1176, 1, 1), (256, 1, 1), 14.688, 11.2),
    ("forward", _CONV_OPS, _CONV, (100, 1, 1), (128, 1, 1), 38.656, 35.7),
    ("forward", ("aten::relu", "aten::clamp_min"), _RELU, (1600, 1, 1), (128, 1, 1), 5.248, 8.8),
    ("forward", ("aten::max_pool2d", "aten::max_pool2d_with_indices"), _POOL, (400, 1, 1), (256, 1, 1), 5.632, 10.3),
    ("forward", _LINEAR_OPS, _GEMM, (4, 8, 1), (128, 1, 1), 9.184, 16.9),
    ("forward", _LINEAR_OPS, _GEMM, (3, 8, 1), (128, 1, 1), 6.912, 15.2),
    ("forward", ("aten::log_softmax", "aten::_log_softmax"), _SOFTMAX, (256, 1, 1), (128, 1, 1), 3.104, 9.6),
    ("forward", ("aten::nll_loss_nd", "aten::nll_loss", "aten::nll_loss_forward"), _NLL, (1, 1, 1), (32, 1, 1), 4.256, 12.4),
    ("backward", ("autograd::engine::evaluate_function: NllLossBackward0", "aten::nll_loss_backward"), _NLL_BWD, (1, 1, 1), (32, 1, 1), 3.936, 18.7),
    ("backward", ("autograd::engine::evaluate_function: AddmmBackward0", "aten::mm"), _GEMM_NN, (1, 8, 1), (128, 1, 1), 5.856, 17.3),
    ("backward", ("autograd::engine::evaluate_function: ConvolutionBackward0", "aten::convolution_backward"), _DGRAD, (100, 1, 1), (128, 1, 1), 36.544, 44.8),
    ("backward", ("autograd::engine::evaluate_function: ConvolutionBackward0", "aten::convolution_backward"), _WGRAD, (16, 1, 2), (128, 1, 1), 52.096, 21.3),
    ("Optimizer.step#SGD.step", ("aten::_fused_sgd_",), _SGD, (10, 1, 1), (512, 1, 1), 8.768, 57.5),
]
LAUNCH_US = 4.2          # cudaLaunchKernel on the CPU
INPUT_BYTES = 256 * 1 * 28 * 28 * 4
LABEL_BYTES = 256 * 8


class _Trace:
    """Events in the order Kineto writes them (CPU ops, then flows, then GPU activity)."""

    def __init__(self):
        self.cpu: list[dict] = []
        self.gpu: list[dict] = []
        self.flows: list[dict] = []
        self.external = 0
        self.correlation = 100
        self.gpu_free = T0        # when the GPU stream is next idle

    def op(self, name: str, cat: str, ts: float, dur: float, **args) -> dict:
        self.external += 1
        event = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": round(ts, 3),
                 "dur": round(dur, 3), "args": {"External id": self.external, **args}}
        self.cpu.append(event)
        return event

    def launch(self, ts: float, name: str, kind: str, dur: float, **args) -> float:
        """A CUDA call at `ts` and the GPU activity it starts; returns the activity's end."""
        self.correlation += 1
        api = "cudaLaunchKernel" if kind == "kernel" else \
            "cudaMemsetAsync" if kind == "gpu_memset" else "cudaMemcpyAsync"
        self.cpu.append({"ph": "X", "cat": "cuda_runtime", "name": api, "pid": PID, "tid": TID,
                         "ts": round(ts, 3), "dur": LAUNCH_US,
                         "args": {"External id": self.external, "cbid": 211 if kind == "kernel" else 51,
                                  "correlation": self.correlation}})
        start = max(self.gpu_free, ts + LAUNCH_US + 1.5)
        self.gpu.append({"ph": "X", "cat": kind, "name": name, "pid": 0, "tid": 7,
                         "ts": round(start, 3), "dur": dur,
                         "args": {"External id": self.external, "device": 0, "context": 1, "stream": 7,
                                  "correlation": self.correlation, **args}})
        if kind == "kernel":
            for phase, at, pid, tid in (("s", ts, PID, TID), ("f", start, 0, 7)):
                flow = {"ph": phase, "id": self.correlation, "pid": pid, "tid": tid,
                        "ts": round(at, 3), "cat": "ac2g", "name": "ac2g"}
                self.flows.append(flow if phase == "s" else {**flow, "bp": "e"})
        self.gpu_free = start + dur + 1.2
        return self.gpu_free


def _kernel_args(grid: tuple, block: tuple) -> dict:
    return {"queued": 0, "registers per thread": 32, "shared memory": 0,
            "grid": list(grid), "block": list(block)}


def _step(trace: _Trace, number: int, start: float) -> float:
    """One training step from `start` (us); returns when its CPU side ends."""
    step = trace.op(f"ProfilerStep#{number}", "user_annotation", start, 0.0)
    now = start + 8.0
    trace.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", now, 310.0)
    now += 320.0
    for nbytes in (INPUT_BYTES, LABEL_BYTES):
        copy = trace.op("aten::to", "cpu_op", now, 24.0)
        trace.launch(now + 6.0, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy",
                     round(nbytes / 11.8e3, 3), bytes=nbytes,
                     **{"memory bandwidth (GB/s)": round(nbytes / (nbytes / 11.8e3) / 1e3, 3)})
        now += copy["dur"] + 3.0
    for phase in ("forward", "backward", "Optimizer.step#SGD.step"):
        range_start, gpu_start = now, trace.gpu_free
        annotation = trace.op(phase, "user_annotation", now, 0.0)
        now += 5.0
        if phase == "backward":
            trace.op("aten::fill_", "cpu_op", now, 9.0)
            trace.launch(now + 2.0, "Memset (Device)", "gpu_memset", 1.152, bytes=4,
                         **{"memory bandwidth (GB/s)": 0.003})
            now += 12.0
        for where, ops, kernel, grid, block, gpu_us, cpu_us in STEP:
            if where == phase:
                now = _ops(trace, ops, kernel, grid, block, gpu_us, cpu_us, now)
        annotation["dur"] = round(now - range_start + 2.0, 3)
        trace.gpu.append({"ph": "X", "cat": "gpu_user_annotation", "name": phase, "pid": 0, "tid": 7,
                          "ts": round(max(gpu_start, range_start), 3),
                          "dur": round(trace.gpu_free - max(gpu_start, range_start), 3),
                          "args": {"External id": annotation["args"]["External id"]}})
        now += 4.0
    item = trace.op("aten::item", "cpu_op", now, 0.0)
    end = trace.launch(now + 3.0, "Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 1.6, bytes=4,
                       **{"memory bandwidth (GB/s)": 0.0025})
    now = max(now + 10.0, end + 2.0)
    item["dur"] = round(now - item["ts"], 3)
    step["dur"] = round(now + 6.0 - start, 3)
    return now + 6.0


def _ops(trace: _Trace, ops: tuple, kernel: str, grid: tuple, block: tuple, gpu_us: float,
         cpu_us: float, now: float) -> float:
    """Nested operators (outermost first), the innermost launching `kernel`."""
    events = [trace.op(name, "cpu_op", now + 1.5 * depth, 0.0) for depth, name in enumerate(ops)]
    launch_at = now + 1.5 * len(ops) + cpu_us * 0.4
    trace.launch(launch_at, kernel, "kernel", gpu_us, **_kernel_args(grid, block))
    end = launch_at + LAUNCH_US + cpu_us * 0.6
    for depth, event in enumerate(reversed(events)):
        event["dur"] = round(end + 1.0 * depth - event["ts"], 3)
    return end + len(ops) + 2.0


def trace_events() -> list[dict]:
    trace, now = _Trace(), T0 + 40.0
    for number in range(1, STEPS + 1):
        now = _step(trace, number, now) + 25.0
    return trace.cpu + trace.flows + trace.gpu


def _metadata_events() -> list[dict]:
    meta = [("process_name", PID, 0, {"name": "python3"}), ("process_labels", PID, 0, {"labels": "CPU"}),
            ("process_name", 0, 0, {"name": "python3"}), ("process_labels", 0, 0, {"labels": "GPU 0"}),
            ("thread_name", PID, TID, {"name": "thread 4242 (python3)"}),
            ("thread_name", 0, 7, {"name": "stream 7 "})]
    return [{"name": name, "ph": "M", "ts": T0, "pid": pid, "tid": tid, "args": args}
            for name, pid, tid, args in meta]


def _event_text(event: dict) -> str:
    """One event as Kineto writes it: `ph`, `cat`, `name`, ids and times on the first lines,
    `args` on their own."""
    head = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in event.items() if k != "args")
    if "args" not in event:
        return "  {\n    " + head + "\n  }"
    args = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in event["args"].items())
    return "  {\n    " + head + ",\n    \"args\": {\n      " + args + "\n    }\n  }"


def trace_text(events: list[dict]) -> str:
    props = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in DEVICE.items())
    head = ["{", '  "schemaVersion": 1,', '  "deviceProperties": [', f"    {{{props}}}", "  ],",
            '  "record_shapes": 0,', '  "with_stack": 0,', '  "cuda_runtime_version": 12040,',
            '  "cuda_driver_version": 12040,', '  "displayTimeUnit": "ms",',
            '  "baseTimeNanoseconds": 1732495000000000000,', '  "traceEvents": [']
    body = ",\n".join(_event_text(e) for e in _metadata_events() + events)
    tail = ["  ],", f'  "traceName": "{TRACE_NAME}"', "}"]
    return "\n".join(head) + "\n" + body + "\n" + "\n".join(tail) + "\n"


# -- key_averages ----------------------------------------------------------------------------

def _averages(events: list[dict]) -> list[dict]:
    """torch's `key_averages()`: per name, calls, self and total CPU time, self and total CUDA
    time (a CPU event's CUDA time is the time of the kernels it or its children launched)."""
    cpu = [e for e in events if e["pid"] == PID and e["ph"] == "X"]
    gpu = {e["args"]["correlation"]: e for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")}
    rows: dict[str, dict] = {}
    for event in cpu:
        inside = [c for c in cpu if c is not event and event["ts"] <= c["ts"]
                  and c["ts"] + c["dur"] <= event["ts"] + event["dur"]]
        children = [c for c in inside if not any(o is not c and o["ts"] <= c["ts"]
                                                 and c["ts"] + c["dur"] <= o["ts"] + o["dur"]
                                                 for o in inside)]
        launched = [gpu[c["args"]["correlation"]]["dur"] for c in inside if c["cat"] == "cuda_runtime"]
        own = [gpu[c["args"]["correlation"]]["dur"] for c in children if c["cat"] == "cuda_runtime"]
        row = rows.setdefault(event["name"], {"name": event["name"], "calls": 0, "self_cpu": 0.0,
                                              "cpu": 0.0, "self_cuda": 0.0, "cuda": 0.0})
        row["calls"] += 1
        row["cpu"] += event["dur"]
        row["self_cpu"] += event["dur"] - sum(c["dur"] for c in children)
        row["cuda"] += sum(launched)   # (a CUDA call itself: no device time, as torch prints)
        row["self_cuda"] += sum(own) if event["cat"] == "cpu_op" else 0.0
    for event in gpu.values():
        row = rows.setdefault(event["name"], {"name": event["name"], "calls": 0, "self_cpu": 0.0,
                                              "cpu": 0.0, "self_cuda": 0.0, "cuda": 0.0})
        row["calls"] += 1
        row["self_cuda"] += event["dur"]
        row["cuda"] += event["dur"]
    return list(rows.values())


def _time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def key_averages_table(events: list[dict], row_limit: int = 20) -> str:
    rows = _averages(events)
    self_cpu_total = sum(r["self_cpu"] for r in rows)
    self_cuda_total = sum(r["self_cuda"] for r in rows if r["cpu"] == 0.0)
    shown = sorted(rows, key=lambda r: -r["cuda"])[:row_limit]
    width = min(max(len(r["name"]) for r in rows) + 4, 55)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls"]
    widths = [width] + [12] * 10
    rule = "".join("-" * w + "  " for w in widths)

    def line(cells: list[str]) -> str:
        return "".join(f"{c:>{w}}  " for c, w in zip(cells, widths))
    out = [rule, line(headers), rule]
    for r in shown:
        name = r["name"] if len(r["name"]) <= width else r["name"][:width - 3] + "..."
        out.append(line([
            name, f"{r['self_cpu'] / self_cpu_total * 100:.2f}%", _time(r["self_cpu"]),
            f"{r['cpu'] / self_cpu_total * 100:.2f}%", _time(r["cpu"]), _time(r["cpu"] / r["calls"]),
            _time(r["self_cuda"]), f"{r['self_cuda'] / self_cuda_total * 100:.2f}%", _time(r["cuda"]),
            _time(r["cuda"] / r["calls"]), str(r["calls"])]))
    out += [rule, f"Self CPU time total: {_time(self_cpu_total)}",
            f"Self CUDA time total: {_time(self_cuda_total)}", ""]
    return "\n".join(out)


def train_log(events: list[dict]) -> str:
    lines = ["$ python train_lenet5.py --batch-size 256 --epochs 1 --profile",
             "Using device: cuda (NVIDIA A100-SXM4-40GB)",
             "STAGE:2024-11-25 01:36:40 4242:4242 ActivityProfilerController.cpp:314] Completed Stage: Warm Up",
             "STAGE:2024-11-25 01:36:40 4242:4242 ActivityProfilerController.cpp:320] Completed Stage: Collection",
             "STAGE:2024-11-25 01:36:40 4242:4242 ActivityProfilerController.cpp:324] Completed Stage: Post Processing",
             f"[epoch 0, step 3] loss 2.2184  trace written to {TRACE_NAME}"]
    return "\n".join(lines) + "\n" + key_averages_table(events) + "done\n"


def files() -> dict[str, str]:
    events = trace_events()
    return {f"{FOLDER}/{TRACE_NAME}": trace_text(events), f"{FOLDER}/output.log": train_log(events)}
