"""Jetson `tegrastats` writer for the sample logs (JetPack 6 spelling: `--logfile` timestamps,
`GR3D_FREQ n%@[f,f]`, lower-case sensors, rails in mW)."""

from __future__ import annotations

from datetime import datetime, timedelta

from samples.gpus import rng_for


def tegrastats_orin() -> str:
    """`sudo tegrastats --interval 1000 --logfile tegrastats.log` on a Jetson Orin Nano 8GB
    (JetPack 6.0) while a detector runs on a camera stream for a minute."""
    rng = rng_for("jetson/tegrastats")
    start = datetime(2024, 5, 21, 16, 40, 3)
    lines = []
    ram, temp = 2_431.0, 44.0
    for second in range(62):
        busy = 5 <= second < 57
        load = rng.uniform(72, 93) if busy else rng.uniform(0, 3)
        if busy and second in (31, 32):          # the stream reconnects
            load = rng.uniform(2, 9)
        ram = min(5_112.0, ram + 180) if busy else max(2_431.0, ram - 320)
        temp += ((46 + load * 0.16) - temp) * 0.07
        cpus = ",".join(f"{round(rng.uniform(8, 34) if busy else rng.uniform(0, 5))}%@1510" for _ in range(6))
        gpu_mhz = 624 if busy else 306
        emc = round(load * 0.31 + rng.uniform(1, 4))
        rail = round(1_900 + load * 48 + rng.uniform(-60, 60))
        vin = rail + round(2_450 + rng.uniform(-40, 40))
        stamp = (start + timedelta(seconds=second)).strftime("%m-%d-%Y %H:%M:%S")
        lines.append(
            f"{stamp} RAM {round(ram)}/7620MB (lfb 9x4MB) SWAP 0/3810MB (cached 0MB) CPU [{cpus}] "
            f"EMC_FREQ {emc}%@2133 GR3D_FREQ {round(load)}%@[{gpu_mhz},{gpu_mhz}] NVENC off NVDEC off "
            f"NVJPG off NVJPG1 off VIC off OFA off APE 200 cpu@{temp + 1.2:.3f}C soc2@{temp - 1.1:.3f}C "
            f"soc0@{temp - 0.6:.3f}C gpu@{temp:.3f}C tj@{temp + 1.3:.3f}C soc1@{temp - 0.9:.3f}C "
            f"VDD_IN {vin}mW/{vin - 35}mW VDD_CPU_GPU_CV {rail}mW/{rail - 28}mW VDD_SOC 1430mW/1424mW")
    return "\n".join(lines) + "\n"



def tegrastats_files() -> dict[str, str]:
    return {"jetson_orin/tegrastats.log": tegrastats_orin()}
