"""Which GPU a run ran on: every piece of evidence weighed once, here, for every layer.

`resolve(evidence, db)` gives a run's `GpuIdentity`. The evidence (`Evidence`), strongest first:

1. the user's word: `--gpu` or a `roofreport.toml` `gpu =` (it wins over everything; a logged
   name that disagrees is said in the note);
2. device names the run's logs give (nvidia-smi, nvprof's Device column, ncu's
   `device__attribute_display_name`, nsys, Kineto `deviceProperties`, DCGM): a name that stands
   for one row of the table names the GPU. A name the tool cut (`GeForce RTX 208...`, nvprof's
   `Tesla V100-SXM2`) takes the GPU that other logs of the same folder name in full when they
   agree with it, else the choice it leaves is settled like a product's (below), else it stays
   as logged, with no peaks: never a wrong GPU;
3. the compute capability and SM count a log printed (ncu's `CC 8.0` and `# SMs`, raw pages,
   Kineto): the table's rows of that capability, narrowed by the SM count;
4. GPU tokens in file and folder names (`v100/`, `ncu_vgg16_a100.txt`, `..._k80_full`);
5. architecture hints in kernel names (`architectures.py`): a lower bound only, never a GPU.
   They label otherwise-unknown runs ("GPU not named (Ampere-class kernels)") and check the rest.

Where the evidence names a product but not its variant (`v100`: PCIe or SXM2, 16 or 32 GB), or a
compute capability only, the table's default stands in (`GpuDatabase.stand_in`): the identity
is `assumed`, and its note says what the variants' peaks span and how to name the GPU (`--gpu`).
Evidence that contradicts stronger evidence is named in the note; the stronger wins.
"""

from __future__ import annotations

from roofreport.gpu import names as naming
from roofreport.gpu.architectures import runs_on, title
from roofreport.gpu.database import GpuDatabase, unknown_gpu
from roofreport.gpu.evidence import CC, LOG, NOT_NAMED, PATH, SET_IT, USER, Evidence, GpuIdentity
from roofreport.gpu.specs import GpuSpec


def resolve(evidence: Evidence, db: GpuDatabase) -> GpuIdentity:
    """The run's GPU from its evidence (module docstring)."""
    found = from_logs(evidence, db)
    return override(found, evidence.user, db) if evidence.user else found


def from_logs(evidence: Evidence, db: GpuDatabase) -> GpuIdentity:
    """The GPU the logs and paths name, the user's word left aside."""
    found = (_by_names(evidence, db) or _by_cc(evidence, db) or _by_path(evidence, db)
             or _unnamed(evidence, db))
    return _checked(found, evidence, db)


def override(found: GpuIdentity, user: str, db: GpuDatabase) -> GpuIdentity:
    """The user's GPU, whatever the logs named (`found`: what they named); a logged name that
    disagrees is said in the note."""
    choices = db.named(user)
    spec = db.chosen(user)
    disagree = None
    if found.evidence == LOG and found.name and (found.key != (spec.key if spec else None) or spec is None):
        disagree = f"the logs name {found.name}, but the user's GPU is used"
    identity = GpuIdentity(spec=spec, name=user, label=spec.label if spec else user,
                           family=spec.family if spec else found.family, evidence=USER,
                           assumed=spec is not None and len(choices) > 1)
    unknown = None if spec else unknown_gpu(user, db)
    reason = _assumed_reason(f"the GPU given, {user!r},", choices, spec) if identity.assumed else None
    return identity.noted(reason, unknown, disagree)


# -- each kind of evidence ---------------------------------------------------------------------

def _by_names(evidence: Evidence, db: GpuDatabase) -> GpuIdentity | None:
    if not evidence.names:
        return None
    choices = {name: db.candidates(name) for name in evidence.names}
    named = [(name, found[0]) for name, found in choices.items() if len(found) == 1]
    if named:
        name, spec = named[0]
        others = sorted({other.label for _, other in named if other.key != spec.key})
        disagree = f"the logs also name {', '.join(others)}" if others else None
        return GpuIdentity(spec, name, spec.label, spec.family, LOG).noted(disagree)
    return _completed(evidence, choices, db) or _narrowed(evidence, choices, db)


def _completed(evidence: Evidence, choices: dict[str, list[GpuSpec]], db: GpuDatabase) -> GpuIdentity | None:
    """Cut or unknown names completed by the full name other logs of the folder give, when
    every such name agrees with them and with each other."""
    agreeing = {}
    for neighbour in evidence.neighbours:
        spec = db.match(neighbour)
        if spec is not None and all(spec in found or db.same_gpu(name, neighbour) for name, found in choices.items()):
            agreeing.setdefault(spec.key, (neighbour, spec))
    if len(agreeing) != 1:
        return None
    neighbour, spec = next(iter(agreeing.values()))
    cut = ", ".join(repr(name) for name in choices)
    return GpuIdentity(spec, neighbour, spec.label, spec.family, LOG,
                       note=f"the logs cut the name to {cut}; other logs of the folder name the {neighbour}")


def _narrowed(evidence: Evidence, choices: dict[str, list[GpuSpec]], db: GpuDatabase) -> GpuIdentity | None:
    """Names that stand for several rows (cut, or naming a product) or none the table knows:
    the rows all of them allow, narrowed by the compute capability and path; their stand-in."""
    first = next(iter(choices))
    open_sets = [found for found in choices.values() if found]
    if not open_sets:
        return _unknown_name(evidence, first, db)
    rows = [spec for spec in open_sets[0] if all(spec in found for found in open_sets[1:])]
    rows = _narrower(rows, db.with_cc(evidence.compute_capability, evidence.sm_count))
    rows = _narrower(rows, _path_rows(evidence, db))
    spec = db.stand_in(rows)
    family = spec.family if spec else _shared(s.family for s in rows)
    label = spec.label if spec else naming.clean(first)
    identity = GpuIdentity(spec, first, label, family, LOG, assumed=spec is not None and len(rows) > 1)
    if identity.assumed:
        return identity.noted(_assumed_reason(f"the logs' {first!r}", rows, spec))
    if spec is None:
        return identity.noted(f"{first!r} may be {_listed(rows)}: no peaks; {SET_IT}")
    return identity


def _unknown_name(evidence: Evidence, name: str, db: GpuDatabase) -> GpuIdentity:
    """A logged name the table does not know: the compute capability or path may still tell
    the GPU (said in the note); else the name as logged, with no peaks."""
    other = _by_cc(evidence, db) or _by_path(evidence, db)
    variants = db.other_variants(name)
    unknown = (f"the logs name {naming.clean(name)!r}, a variant the GPU table lacks (it has the {_listed(variants)})"
               if variants else f"the logs name {naming.clean(name)!r}, which the GPU table does not know")
    if other is not None and other.spec is not None:
        return other.noted(unknown)
    family = db.family_of_cc(evidence.compute_capability)
    return GpuIdentity(None, name, naming.clean(name), family, LOG, note=f"{unknown}: no peaks (add it with --peaks)")


def _by_cc(evidence: Evidence, db: GpuDatabase) -> GpuIdentity | None:
    cc = evidence.compute_capability
    if not cc:
        return None
    printed = f"CC {cc}" + (f", {evidence.sm_count} SMs" if evidence.sm_count else "")
    rows = _narrower(db.with_cc(cc, evidence.sm_count), _path_rows(evidence, db))
    spec = db.stand_in(rows)
    family = db.family_of_cc(cc)
    if spec is None:
        label = f"{title(family)} GPU ({printed})" if family else f"GPU ({printed})"
        return GpuIdentity(None, printed, label, family, CC,
                           note=f"{printed} names no one GPU of the table: no peaks; {SET_IT}")
    identity = GpuIdentity(spec, printed, spec.label, spec.family, CC, assumed=True)
    return identity.noted(_assumed_reason(f"the logs' {printed}", rows, spec))


def _by_path(evidence: Evidence, db: GpuDatabase) -> GpuIdentity | None:
    """The GPU the path's tokens name (`_path_rows`). A token naming a variant the table lacks
    (`a800_pcie_40gb`) gives no peaks rather than another variant of the product, even where
    another token names only the product (`a800/`)."""
    rows = _path_rows(evidence, db)
    for token in evidence.path_tokens:
        variants = db.other_variants(token)
        if variants and all(spec in variants for spec in rows):
            return GpuIdentity(None, token, token, _shared(s.family for s in variants), PATH,
                               note=f"the path's {token!r} names a variant the GPU table lacks "
                                    f"(it has the {_listed(variants)}): no peaks; {SET_IT}")
    token = next((token for token in evidence.path_tokens if db.candidates(token)), None)
    if token is not None:
        spec = db.stand_in(rows)
        if spec is None:
            label = naming.spelled_as_table(token, [s.label for s in rows]) or token
            return GpuIdentity(None, token, label, _shared(s.family for s in rows), PATH,
                               note=f"the path's {token!r} may be {_listed(rows)}: no peaks; {SET_IT}")
        identity = GpuIdentity(spec, token, spec.label, spec.family, PATH, assumed=len(rows) > 1)
        return identity.noted(_assumed_reason(f"the path's {token!r}", rows, spec)) if identity.assumed else identity
    if evidence.path_tokens:
        token = evidence.path_tokens[0]
        return GpuIdentity(None, token, token, None, PATH, note=f"the GPU table does not know {token!r}: no peaks")
    return None


def _unnamed(evidence: Evidence, db: GpuDatabase) -> GpuIdentity:
    """Nothing names the GPU: kernel names may still tell its class."""
    if not evidence.kernel_hint:
        return GpuIdentity()
    family = db.family_of_cc(evidence.kernel_hint)
    if not family:
        return GpuIdentity()
    return GpuIdentity(label=f"{NOT_NAMED} ({title(family)}-class kernels)",
                       note=f"kernel names need at least a {title(family)} GPU (CC {evidence.kernel_hint}) "
                            f"but nothing names it: no peaks; {SET_IT}")


def _checked(found: GpuIdentity, evidence: Evidence, db: GpuDatabase) -> GpuIdentity:
    """Weaker evidence that contradicts the GPU found, said in its note."""
    spec = found.spec
    if spec is None:
        return found
    said = []
    cc = evidence.compute_capability
    if cc and found.evidence == LOG and spec.compute_capability and spec.compute_capability != cc:
        said.append(f"the logs print CC {cc}, not the {spec.label}'s {spec.compute_capability}")
    path = _path_rows(evidence, db)
    if path and found.evidence in (LOG, CC) and spec not in path:
        said.append(f"the path's {evidence.path_tokens[0]!r} names another GPU; the logs win")
    lacking = next((token for token in evidence.path_tokens if db.other_variants(token)), None)
    if lacking and found.evidence in (LOG, CC):
        said.append(f"the path's {lacking!r} names a variant the GPU table lacks; the logs' GPU is used")
    if not runs_on(spec.compute_capability, evidence.kernel_hint):
        said.append(f"kernel names need CC {evidence.kernel_hint} or later, which the {spec.label} "
                    f"(CC {spec.compute_capability}) is not: these logs may not be this GPU's")
    return found.noted(*said)


# -- helpers -----------------------------------------------------------------------------------

def _path_rows(evidence: Evidence, db: GpuDatabase) -> list[GpuSpec]:
    """The rows the first path token that names any stands for, narrowed by the tokens after it
    (`v100/v100_32gb_run/`: the 32 GB V100s), never to none."""
    found = [rows for rows in (db.candidates(token) for token in evidence.path_tokens) if rows]
    if not found:
        return []
    rows = found[0]
    for other in found[1:]:
        rows = _narrower(rows, other)
    return rows


def _narrower(rows: list[GpuSpec], allowed: list[GpuSpec]) -> list[GpuSpec]:
    """`rows` narrowed to `allowed` where that leaves any (weaker evidence narrows, never empties)."""
    kept = [spec for spec in rows if spec in allowed]
    return kept or rows


def _assumed_reason(what: str, rows: list[GpuSpec], spec: GpuSpec) -> str:
    if len(rows) == 1:
        return f"{what} names no GPU: the {spec.label}, the table's one GPU with it, is assumed; {SET_IT}"
    return (f"{what} does not name the variant: the {spec.label} is assumed "
            f"({_spans(rows)}); {SET_IT}")


def _spans(rows: list[GpuSpec]) -> str:
    """What the choices' peaks span: `FP32 14.0-15.7 TFLOP/s, DRAM 900 GB/s over 6 GPUs`."""
    parts = []
    for what, attr, scale, unit, digits in (("FP32", "fp32", 1e12, "TFLOP/s", 1), ("DRAM", "dram_bw", 1e9, "GB/s", 0)):
        values = sorted(getattr(s, attr) for s in rows if getattr(s, attr))
        if values:
            low, high = f"{values[0] / scale:.{digits}f}", f"{values[-1] / scale:.{digits}f}"
            parts.append(f"{what} {low if low == high else f'{low}-{high}'} {unit}")
    return ", ".join(parts) + f" over {len(rows)} GPUs" if parts else f"{len(rows)} GPUs"


def _listed(rows: list[GpuSpec], most: int = 4) -> str:
    labels = [s.label for s in rows]
    if len(labels) > most:
        return f"{', '.join(labels[:most])} or {len(labels) - most} more"
    return " or ".join([", ".join(labels[:-1]), labels[-1]]) if len(labels) > 1 else labels[0]


def _shared(values):
    found = set(values)
    return found.pop() if len(found) == 1 else None
