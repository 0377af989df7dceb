"""A simulated timeline of several training steps: kernel launches, copies and memsets with
their start times, as a trace shows them."""

from __future__ import annotations

import random
from dataclasses import dataclass

from samples.gpus import BATCH, Gpu
from samples.kernels import Kernel

# -- timeline --------------------------------------------------------------------------------

@dataclass
class Event:
    """One row of a GPU trace (kernel, memcpy or memset) and the API call that issued it."""

    kind: str
    name: str
    start: int
    dur: int
    corr: int
    api: str
    api_start: int
    api_dur: int
    nbytes: int = 0
    src: str = ""
    dst: str = ""
    kernel: Kernel | None = None
    iteration: int = 0


@dataclass
class Timeline:
    events: list[Event]
    ranges: list[tuple[str, int, int]]          # NVTX push/pop: (name, start, end), CPU time
    syncs: list[tuple[str, int, int]]           # blocking API calls: (name, start, duration)


def simulate(kernels: list[Kernel], gpu: Gpu, iterations: int, rng: random.Random,
             t0: int, data_wait_ns: float, launch_ns: float) -> Timeline:
    """Replay `iterations` training steps: the CPU issues launches every `launch_ns`; the GPU
    runs them in order on one stream, idling when the CPU (or the data loader) is behind."""
    tl = Timeline([], [], [])
    state = {"cpu": t0, "gpu": t0, "corr": 1200 + rng.randrange(400)}
    for it in range(iterations):
        state["cpu"] += int(data_wait_ns * rng.uniform(0.85, 1.15))
        for nbytes in (BATCH * 3 * 224 * 224 * 4, BATCH * 8):       # images, labels
            _copy(tl, state, rng, it, "[CUDA memcpy Host-to-Device]", nbytes, "Pinned", "Device", gpu.pcie)
        phase, range_start = None, state["cpu"]
        for k in kernels:
            if k.phase != phase:
                if phase is not None:
                    tl.ranges.append((phase, range_start, _device_sync(tl, state, rng)))
                phase, range_start = k.phase, state["cpu"]
                if phase == "backward" and k.name.startswith("void at::native::<unnamed>::nll") and \
                        kernels[0].layer == "input":   # cuDNN's persistent BN kernels reset their semaphores
                    _memset(tl, state, rng, it, 8192)
            _launch(tl, state, rng, it, k, launch_ns)
            if "unscale" in k.name:   # GradScaler.step() reads found_inf back: the CPU waits
                _copy(tl, state, rng, it, "[CUDA memcpy Device-to-Host]", 4, "Device", "Pageable", gpu.pcie, sync=True)
        tl.ranges.append((phase, range_start, _device_sync(tl, state, rng)))
        _copy(tl, state, rng, it, "[CUDA memcpy Device-to-Host]", 4, "Device", "Pageable", gpu.pcie, sync=True)
        state["cpu"] += int(rng.uniform(40_000, 90_000))             # logging, meters, next()
    return tl


def _device_sync(tl: Timeline, state: dict, rng: random.Random) -> int:
    """The profiling script's `torch.cuda.synchronize()` before each `range_pop()`, so the NVTX
    ranges measure the GPU work of their phase."""
    cpu = state["cpu"]
    end = max(cpu, state["gpu"]) + int(rng.uniform(3000, 6000))
    tl.syncs.append(("cudaDeviceSynchronize", cpu, end - cpu))
    state["cpu"] = end + int(rng.uniform(1500, 3000))
    return state["cpu"]


def _memset(tl: Timeline, state: dict, rng: random.Random, it: int, nbytes: int) -> None:
    state["corr"] += 1
    cpu = state["cpu"]
    start = max(cpu + int(rng.uniform(2500, 4000)), state["gpu"] + int(rng.uniform(900, 1500)))
    dur = int(rng.uniform(1000, 1400))
    tl.events.append(Event("memset", "[CUDA memset]", start, dur, state["corr"], "cudaMemsetAsync", cpu,
                           int(rng.uniform(3000, 5500)), nbytes, "Device", "", iteration=it))
    state["gpu"] = start + dur
    state["cpu"] = cpu + int(rng.uniform(6000, 9000))


def _launch(tl: Timeline, state: dict, rng: random.Random, it: int, k: Kernel, launch_ns: float) -> None:
    state["corr"] += 1
    state["cpu"] += int(launch_ns * rng.uniform(0.7, 1.5))
    start = max(state["cpu"] + int(rng.uniform(2500, 4500)), state["gpu"] + int(rng.uniform(900, 1900)))
    dur = int(k.nsys_ns * rng.uniform(0.99, 1.012))
    tl.events.append(Event("kernel", k.name, start, dur, state["corr"], k.api, state["cpu"],
                           int(rng.uniform(3200, 7800)), kernel=k, iteration=it))
    state["gpu"] = start + dur


def _copy(tl: Timeline, state: dict, rng: random.Random, it: int, name: str, nbytes: int, src: str, dst: str,
          rate: float, sync: bool = False) -> None:
    """A cudaMemcpyAsync; with `sync` the CPU then waits for it (`.item()`), as a
    cudaStreamSynchronize the API summary shows."""
    state["corr"] += 1
    cpu = state["cpu"]
    start = max(cpu + int(rng.uniform(2500, 4000)), state["gpu"] + int(rng.uniform(900, 1500)))
    dur = int(nbytes / rate * 1e9 * rng.uniform(0.97, 1.05)) + int(rng.uniform(1000, 1500))
    tl.events.append(Event("memcpy", name, start, dur, state["corr"], "cudaMemcpyAsync", cpu,
                           int(rng.uniform(5500, 11000)), nbytes, src, dst, iteration=it))
    state["gpu"] = start + dur
    if sync:
        wait = start + dur - cpu + int(rng.uniform(2000, 4000))
        tl.syncs.append(("cudaStreamSynchronize", cpu + 8000, wait))
        state["cpu"] = cpu + 8000 + wait
    else:
        state["cpu"] = cpu + int(rng.uniform(9000, 16000))
