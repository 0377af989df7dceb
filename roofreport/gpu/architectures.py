"""Architectures: compute capabilities compared, and what kernel names say about the GPU.

Kernel names carry the architecture their code was built for: cuDNN's and cuBLAS's `maxwell_`,
`volta_`, `turing_`, `ampere_` prefixes, CUTLASS's `sm80_xmma_...` and `cutlass::arch::Sm80`,
cuBLAS's `sgemm_sm35_ldg_...`. That is a LOWER BOUND on the GPU, never its model: a P40 runs
`maxwell_` cuDNN kernels, a T4 or an A100 `volta_` ones, and code for `sm80` runs on every later
GPU. So a hint never picks a GPU; it tells otherwise-unknown runs apart ("GPU not named
(Ampere-class kernels)") and checks the GPU the rest of the evidence names (a V100 cannot run
`sm80_` kernels).

A compute capability is compared as (major, minor) for NVIDIA's `8.0`; an AMD LLVM target
(`gfx90a`) has no order here and bounds nothing.
"""

from __future__ import annotations

import re

# An architecture's word in a kernel name -> the lowest compute capability it runs on.
_ARCH_WORDS = {"kepler": "3.0", "maxwell": "5.0", "pascal": "6.0", "volta": "7.0", "turing": "7.5",
               "ampere": "8.0", "ada": "8.9", "hopper": "9.0", "blackwell": "10.0"}
_HINT = re.compile(
    r"(?<![a-z0-9])(?:(?P<word>" + "|".join(_ARCH_WORDS) + r")_|sm_?(?P<sm>[1-9]\d{1,2})[a-z]?(?![0-9]))",
    re.IGNORECASE)


def cc_order(cc: str | None) -> tuple[int, int] | None:
    """(major, minor) of an NVIDIA compute capability (`8.6` -> (8, 6)); None for anything else."""
    if not cc:
        return None
    found = re.fullmatch(r"(\d+)\.(\d+)", cc.strip())
    return (int(found[1]), int(found[2])) if found else None


def _sm_cc(digits: str) -> str:
    """`sm86` -> `8.6`, `sm100` -> `10.0`, `sm120` -> `12.0`."""
    return f"{digits[:-1]}.{digits[-1]}"


def kernel_hint(names) -> str | None:
    """The compute capability the kernel names require at least (the highest any one of them
    requires), or None when no name tells."""
    best: tuple[int, int] | None = None
    for name in names:
        if not name:
            continue
        for found in _HINT.finditer(name):
            cc = _ARCH_WORDS[found["word"].lower()] if found["word"] else _sm_cc(found["sm"])
            order = cc_order(cc)
            if order is not None and (best is None or order > best):
                best = order
    return f"{best[0]}.{best[1]}" if best else None


def runs_on(cc: str | None, hint: str | None) -> bool:
    """A GPU of compute capability `cc` can run kernels built for `hint` (unknown: it can)."""
    have, need = cc_order(cc), cc_order(hint)
    return have is None or need is None or have >= need


def title(family: str | None) -> str:
    """A family as prose writes it: "volta" -> "Volta", "cdna2" -> "CDNA2"."""
    if not family:
        return ""
    return family.upper() if any(ch.isdigit() for ch in family) else family.capitalize()
