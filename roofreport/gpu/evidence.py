"""What a run's GPU is said to be, as values every layer passes around.

* `GpuSettings`: what the user says of the GPU (`--gpu`, `--peaks`), from the CLI down;
* `Evidence`: what a run's logs, paths, folder and user say of its GPU (a file's own part is kept
  in its `FileFacts`);
* `GpuIdentity`: the resolver's answer (`resolve.py`), the runs table's `gpu*` columns.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from roofreport.gpu import names as naming
from roofreport.gpu.architectures import cc_order, kernel_hint
from roofreport.gpu.database import GpuDatabase, load_database, unknown_gpu
from roofreport.gpu.specs import GpuSpec, normal_cc

NOT_NAMED = "GPU not named"
CPU_LABEL = "CPU"
# `gpu_evidence` values: which evidence decided the GPU (null: none did)
USER, LOG, CC, PATH = "user", "log", "cc", "path"
SET_IT = "name the GPU with --gpu"


@dataclass(frozen=True)
class GpuSettings:
    """What the user says about GPUs, from the CLI down: `gpu` (a device name or GPU table key:
    the GPU every run ran on) and `peaks` (a TSV/TOML file adding or correcting GPUs)."""

    gpu: str | None = None
    peaks: Path | None = None

    def database(self) -> GpuDatabase:
        return load_database(self.peaks)

    def unknown(self) -> str | None:
        """Why `gpu` gives no peaks when the table (with the peaks file) does not know it, with
        the closest names it does know (or names several GPUs and none by default); None when
        it names one GPU (or no GPU was given)."""
        if not self.gpu:
            return None
        db = self.database()
        if db.chosen(self.gpu) is not None:
            return None
        return unknown_gpu(self.gpu, db)

    def fingerprint(self) -> str:
        """What a dataset folder remembers of the settings it was read with (the peaks file's
        bytes included)."""
        peaks = Path(self.peaks).read_bytes() if self.peaks else b""
        digest = hashlib.blake2b(peaks, digest_size=8).hexdigest() if self.peaks else ""
        return f"gpu={self.gpu or ''};peaks={digest}"


NO_SETTINGS = GpuSettings()     # the user said nothing of the GPU


@dataclass(frozen=True)
class Evidence:
    """What a run's logs, paths and user say about its GPU (module docstring). A file's own
    evidence (`FileFacts.gpu`) holds `names`, `compute_capability`, `sm_count` and
    `kernel_hint`; the run's adds the rest."""

    user: str | None = None                 # --gpu, roofreport.toml `gpu =`
    names: tuple[str, ...] = ()             # device names the logs give, in order
    compute_capability: str | None = None   # `8.0`, `gfx90a`
    sm_count: int | None = None             # SMs (AMD: compute units) the log printed
    path_tokens: tuple[str, ...] = ()       # GPU tokens of file, folder and job names, nearest first
    kernel_hint: str | None = None          # the compute capability kernel names need at least
    neighbours: tuple[str, ...] = ()        # device names other logs of the same folder give

    def __post_init__(self) -> None:
        """Names as the resolver reads them, however the evidence was made: cells that say
        nothing (a bare index `0`) left out, an LLVM target where a name stands (rocprof's
        agent `gfx90a:sramecc+`) taken as the compute capability it is."""
        names = _said([self.names])
        targets = [name for name in names if naming.LLVM_TARGET.fullmatch(name)]
        cc = self.compute_capability or (targets[0].strip().split(":")[0] if targets else None)
        object.__setattr__(self, "names", tuple(name for name in names if name not in targets))
        object.__setattr__(self, "compute_capability", normal_cc(cc))

    @classmethod
    def combined(cls, parts) -> Evidence:
        """Several files' (or units') evidence as one: lists joined in order, the first compute
        capability and SM count given, the highest kernel hint."""
        parts = list(parts)
        hints = [p.kernel_hint for p in parts if p.kernel_hint]
        return cls(
            user=next((p.user for p in parts if p.user), None),
            names=_joined(p.names for p in parts),
            compute_capability=next((p.compute_capability for p in parts if p.compute_capability), None),
            sm_count=next((p.sm_count for p in parts if p.sm_count), None),
            path_tokens=_joined(p.path_tokens for p in parts),
            kernel_hint=max(hints, key=lambda hint: cc_order(hint) or (0, 0)) if hints else None,
            neighbours=_joined(p.neighbours for p in parts))

    @classmethod
    def of_names(cls, logged, kernel_names=(), cc: str | None = None, sm_count: int | None = None) -> Evidence:
        """A file's evidence: its device names, compute capability, SM count and the hint its
        kernel names give."""
        return cls(names=tuple(name for name in logged if name), compute_capability=cc,
                   sm_count=int(sm_count) if sm_count else None, kernel_hint=kernel_hint(kernel_names))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> Evidence:
        data = data or {}
        known = {f.name for f in fields(cls)}
        return cls(**{key: tuple(value) if isinstance(value, list) else value
                      for key, value in data.items() if key in known})


@dataclass(frozen=True)
class GpuIdentity:
    """A run's GPU as every layer uses it: `spec` (whose peaks apply; None when unknown), `name`
    (as the deciding evidence spells it: the runs table's `gpu`), `label` (the one name reports
    use), `family` (the architecture: the kernel counters' rules), `evidence` (which evidence
    decided: user, log, cc, path; None when none did), `assumed` (a default variant stands in for
    one the evidence did not name) and `note` (why assumed, what disagreed; None if nothing)."""

    spec: GpuSpec | None = None
    name: str | None = None
    label: str = NOT_NAMED
    family: str | None = None
    evidence: str | None = None
    assumed: bool = False
    note: str | None = None

    @property
    def key(self) -> str | None:
        return self.spec.key if self.spec else None

    def columns(self) -> dict:
        """The runs table's GPU columns."""
        return {"gpu": self.name, "gpu_model": self.key, "gpu_label": self.label, "gpu_family": self.family,
                "gpu_evidence": self.evidence, "gpu_assumed": self.assumed, "gpu_note": self.note}

    @classmethod
    def from_row(cls, row: dict, db: GpuDatabase) -> GpuIdentity:
        """The identity a runs table's row holds, with its spec from `db` (a user's peaks file
        may know a logged name the shipped table did not: it then names the GPU)."""
        identity = cls(spec=db.get(row.get("gpu_model")), name=row.get("gpu"),
                       label=row.get("gpu_label") or NOT_NAMED, family=row.get("gpu_family"),
                       evidence=row.get("gpu_evidence"), assumed=bool(row.get("gpu_assumed")),
                       note=row.get("gpu_note"))
        if identity.spec is None and identity.evidence == LOG and identity.name:
            spec = db.match(identity.name)
            if spec is not None:
                return replace(identity, spec=spec, label=spec.label, family=spec.family, note=None)
        return identity

    def noted(self, *notes: str | None) -> GpuIdentity:
        """This identity with more said in its note."""
        parts = [self.note, *notes]
        return replace(self, note="; ".join(p for p in parts if p) or None)


CPU = GpuIdentity(label=CPU_LABEL)


def _said(groups) -> tuple[str, ...]:
    """Device names joined in order, without the cells that say nothing (a bare index `0`)."""
    return tuple(name for name in _joined(groups) if not naming.says_nothing(name))


def _joined(groups) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group if item))


def _joined(groups) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group if item))
