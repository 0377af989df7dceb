"""The GPU database: the shipped table (`data/gpu_specs.tsv`), a user's additions, and the look-ups
the resolver asks of it.

* `candidates(name)`: every row a device name or path token can stand for (`names.py` rules);
  `match(name)` the one row when there is exactly one (a GPU a user added wins a name it shares);
* `named(name)`: every row a GPU name as a user types it stands for (`--gpu`, a toml's `gpu =`),
  `chosen(name)` the one that stands in for them (the desktop variant over the laptop one, then
  as `stand_in`); `closest(name)` the nearest names of a name that stands for none;
* `with_cc(cc, sm_count)`: the rows of a compute capability, narrowed by the SM count a log
  printed;
* `stand_in(rows)`: the row that stands for a choice the evidence left open, from the table's
  data alone: the default variant of the one product the rows are variants of, else the default
  of the one compute capability they share (`specs.py`: `product`, `default_for`);
* `family_of_cc(cc)`: the architecture family of a compute capability, as the table's rows of
  that capability (or of its major version) agree on it.

Users add or correct GPUs with a TSV of the same columns or a TOML file (`with_overrides`).
"""

from __future__ import annotations

import re

from functools import lru_cache
from pathlib import Path

from roofreport.gpu import names as naming
from roofreport.gpu.architectures import cc_order
from roofreport.gpu.names import Name
from roofreport.gpu.specs import GpuSpec, normal_cc, read_tsv, spec_from_row
from roofreport.resources import package_data


_ONE_DIE = "(per "    # a row of one die of a board of several: `Tesla K80 (per GK210 GPU)`
_PRODUCT_LINE = re.compile(r"^(?:tesla|geforce|quadro|titan|nvidia|amd|instinct|radeon(?: pro)?) ")


class GpuDatabase:
    """GPU specs and the rules that find one from a device name, a path token or a compute
    capability."""

    def __init__(self, specs: list[GpuSpec], preferred: frozenset[str] = frozenset(), origin: str | None = None):
        self.specs = list(specs)
        self.origin = origin           # the user's peaks file the database holds, if any
        self._preferred = preferred    # keys of a user's own GPUs: they win a shared name
        # name -> candidates: a campaign names a few GPUs thousands of times (every file's
        # device and path tokens), and a look-up walks every name of the database
        self._found: dict[str, tuple[GpuSpec, ...]] = {}
        self._by_key = {s.key: s for s in self.specs}
        self._names = [(Name.of(n), s) for s in self.specs for n in dict.fromkeys((s.key, *s.aliases))]
        self._by_name: dict[str, list[tuple[Name, GpuSpec]]] = {}
        for name, spec in self._names:
            self._by_name.setdefault(name.text, []).append((name, spec))
        self._runs = naming.word_runs(self._names)
        # each row's names as a user's typed name is compared with them (names.typed_words)
        self._typed = [(naming.typed_words(n), s) for s in self.specs
                       for n in dict.fromkeys((s.key, *s.aliases, s.label)) if n]

    def __len__(self) -> int:
        return len(self.specs)

    def get(self, key: str | None) -> GpuSpec | None:
        return self._by_key.get(key) if key else None

    # -- names ---------------------------------------------------------------------------------

    def match(self, device_name: str | None) -> GpuSpec | None:
        """The one spec a device name or path token stands for (names.py), or None."""
        found = self.candidates(device_name)
        return found[0] if len(found) == 1 else None

    def named(self, typed: str | None) -> list[GpuSpec]:
        """Every row a GPU name as a user types it stands for: the row it spells exactly, else
        those whose names hold its words (`names.covers`), else what `candidates` finds (a GPU
        token: `rtx4090`). A GPU a user added wins a name it shares."""
        raw = naming.clean(typed or "")
        if not raw:
            return []
        asked = naming.typed_words(raw)
        by_words = _unique(spec for row_words, spec in self._typed if naming.covers(asked, row_words))
        found = self._exact(Name.of(raw)) or by_words or self.candidates(raw)
        mine = [s for s in found if s.key in self._preferred]
        return mine or found

    def chosen(self, typed: str | None) -> GpuSpec | None:
        """The row a user's GPU name stands for (`named`): the one row, else the stand-in of its
        desktop rows when the name does not ask for a laptop (`RTX 4090`: the desktop card).
        None: the name names no GPU, or several the table gives no default for."""
        rows = self.named(typed)
        if not naming.portable(naming.typed_words(typed or "")):
            rows = [s for s in rows if not self._portable(s)] or rows
        return self.stand_in(rows)

    def _portable(self, spec: GpuSpec) -> bool:
        return any(naming.portable(row_words) for row_words, row in self._typed if row is spec)

    def closest(self, device_name: str, limit: int = 3) -> list[str]:
        """The GPUs of the table (by key) whose names are nearest to one it does not know
        (`Jetson AGX Orn 64` -> `Jetson AGX Orin 64GB`...), for a message that says what the
        user may have meant: always `limit` of them (the nearest, however far)."""
        import difflib  # (only when a user's GPU name is not in the table)

        def bare(text: str) -> str:   # the product line's word says little (`geforce rtx 5090`)
            return _PRODUCT_LINE.sub("", text)

        wanted = bare(Name.of(device_name).text)
        best: dict[str, float] = {}
        for name, spec in self._names:
            score = difflib.SequenceMatcher(None, wanted, bare(name.text)).ratio()
            best[spec.key] = max(score, best.get(spec.key, 0.0))
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
        return [key for key, _ in ranked[:limit]]

    def candidates(self, device_name: str | None) -> list[GpuSpec]:
        """Every spec the name can stand for, by the first rule that finds any (names.py)."""
        key = device_name or ""
        if key not in self._found:
            self._found[key] = tuple(self._candidates(key))
        return list(self._found[key])

    def _candidates(self, device_name: str) -> list[GpuSpec]:
        raw = naming.clean(device_name)
        if not raw:
            return []
        cut = naming.CUT_MARK.search(raw)
        if cut:
            found = self._beginning(Name.of(raw[:cut.start()], keep_end=True))
        else:
            name = Name.of(raw)
            found = (self._exact(name) or self._extended(name)
                     or (self._beginning(name) if len(raw) >= naming.SHORTEST_CUT else [])
                     or self._tokens(name))
        mine = [s for s in found if s.key in self._preferred]
        return mine or found

    def family(self, device_name: str | None) -> str | None:
        """The GPU family every candidate shares (`v100` is some Volta), or None."""
        return _shared(s.family for s in self.candidates(device_name))

    def same_gpu(self, first: str, second: str) -> bool:
        """Two device names that can be one GPU: the same row, or one name the other cut short
        (`NVIDIA GeForce RTX` of a raw page, `NVIDIA GeForce RTX 2080 Ti`)."""
        spec_a, spec_b = self.match(first), self.match(second)
        if spec_a is not None and spec_b is not None:
            return spec_a.key == spec_b.key
        short_a, short_b = _bare(first), _bare(second)
        return short_a.startswith(short_b) or short_b.startswith(short_a)

    def _exact(self, name: Name) -> list[GpuSpec]:
        return _unique(s for n, s in self._by_name.get(name.text, []) if n.usable_for(name))

    def _extended(self, name: Name) -> list[GpuSpec]:
        """Rows of the longest name that `name` continues by words naming no other GPU."""
        found = [(len(n.text), s) for n, s in self._names if naming.continues(name.text, n.text) and n.usable_for(name)]
        longest = max((size for size, _ in found), default=0)
        return _unique(s for size, s in found if size == longest)

    def _beginning(self, name: Name) -> list[GpuSpec]:
        """Rows with a longer name that begins with the cut `name`."""
        if not name.text.strip():
            return []
        return _unique(s for n, s in self._names
                       if n.text.startswith(name.text) and n.text != name.text and n.usable_for(name))

    def _tokens(self, name: Name) -> list[GpuSpec]:
        """Rows of the GPU tokens in `name`, each narrowed to the variant its words after it
        name (none when the table lacks that variant: `other_variants`)."""
        return _unique(s for product, variant in self._token_words(name) for s in self._variant_rows(product, variant))

    def other_variants(self, device_name: str | None) -> list[GpuSpec]:
        """The rows of the product a name's GPU token names when the variant words after it (a
        board, a memory size) fit none of them (`a800_pcie_40gb`: the A800s the table has, none
        a 40 GB PCIe card); empty when the name stands for a row, or names no product."""
        raw = naming.clean(device_name or "")
        if not raw or naming.is_cut(raw) or self.candidates(raw):
            return []
        return _unique(s for product, variant in self._token_words(Name.of(raw)) if variant != naming.Variant()
                       and not self._variant_rows(product, variant) for s in self._runs.get(product, []))

    def _token_words(self, name: Name) -> list[tuple[str, naming.Variant]]:
        """Each GPU token of the name: its product's words run together (`a800`, `rtxa6000`) and
        its variant words (`names.variant_words`)."""
        found = (naming.variant_words(m.group(0)) for m in naming.token_pattern().finditer(name.text))
        return [(product.replace(" ", ""), variant) for product, variant in found]

    def _variant_rows(self, product: str, variant: naming.Variant) -> list[GpuSpec]:
        rows = self._runs.get(product, [])
        if variant == naming.Variant():
            return rows
        return [s for s in rows if variant.fits(self._row_words(s), s.dram_capacity / 2.0**30 if s.dram_capacity else None,
                                                one_die=_ONE_DIE in s.key)]

    def _row_words(self, spec: GpuSpec) -> tuple[str, ...]:
        """Every word of the row's names as a typed name is compared (`names.typed_words`)."""
        return tuple(word for row_words, row in self._typed if row is spec for word in row_words)

    # -- compute capabilities and defaults -----------------------------------------------------

    def with_cc(self, cc: str | None, sm_count: int | None = None) -> list[GpuSpec]:
        """The rows of compute capability `cc`, those with `sm_count` SMs when the log printed
        it (none when no row of that capability has that many: a GPU the table lacks, or a
        slice of one)."""
        wanted = normal_cc(cc)
        rows = [s for s in self.specs if wanted and s.compute_capability == wanted]
        if sm_count:
            rows = [s for s in rows if s.sm_count == sm_count]
        return rows

    def family_of_cc(self, cc: str | None) -> str | None:
        """The family the table's rows of `cc` share, else the one its major version's rows share
        (`12.1`, a capability no row lists, is Blackwell like 12.0)."""
        wanted = normal_cc(cc)
        exact = _shared(s.family for s in self.specs if wanted and s.compute_capability == wanted)
        order = cc_order(wanted)
        if exact or order is None:
            return exact
        return _shared(s.family for s in self.specs if (cc_order(s.compute_capability) or (None,))[0] == order[0])

    def stand_in(self, rows: list[GpuSpec]) -> GpuSpec | None:
        """The row that stands for `rows` when the evidence names no one of them (module
        docstring): the one row; the default variant of the one product they all are, else their
        first; the default of the one compute capability they share. None: they are different
        GPUs the table gives no default for."""
        if len(rows) == 1:
            return rows[0]
        if not rows:
            return None
        product = _shared(s.product for s in rows)
        if product is not None:
            default = next((s for s in self.specs if s.product == product and "product" in s.default_for), None)
            return default if default in rows else _nearest(default, rows)
        cc = _shared(s.compute_capability for s in rows)
        default = next((s for s in self.specs if cc and s.compute_capability == cc and "cc" in s.default_for), None)
        return default if default in rows else None

    # -- a user's own values -------------------------------------------------------------------

    def with_overrides(self, path: Path) -> GpuDatabase:
        """A new database with the rows of a user file (TSV with gpu_specs.tsv's columns, or TOML
        `[[gpu]]` tables with the same keys) added, or merged into the GPU of the same name."""
        from roofreport.userfiles import read_records  # (tomllib: only for a user's file)

        rows = read_records(path, "gpu", "GPU peaks file", delimiter="\t")
        current = {s.key: s for s in self.specs}
        added: list[str] = []
        for row in rows:
            base = self._find_base(row, current)
            spec = spec_from_row(row, base=base, origin=str(path))
            if base is None and spec.key not in current:
                added.append(spec.key)
            current[spec.key] = spec
        order = added + [s.key for s in self.specs]
        return GpuDatabase([current[k] for k in order], self._preferred | frozenset(added), origin=str(path))

    def _find_base(self, row: dict, current: dict[str, GpuSpec]) -> GpuSpec | None:
        name = str(row.get("gpu") or "")
        if not name:
            return None
        exact = self._exact(Name.of(name))
        found = current.get(name) or (exact[0] if len(exact) == 1 else None)
        return current.get(found.key) if found else None


def _nearest(default: GpuSpec | None, rows: list[GpuSpec]) -> GpuSpec:
    """The row of `rows` whose key shares most words with the product's default (the first on
    a tie): `A100 SXM4 80GB` for `A100 SXM4 40GB` among the 80 GB variants."""
    if default is None:
        return rows[0]
    wanted = set(naming.words(default.key).split())
    return max(rows, key=lambda spec: len(wanted & set(naming.words(spec.key).split())))


def _unique(specs) -> list[GpuSpec]:
    return list({s.key: s for s in specs}.values())


def _shared(values):
    """The one value all of `values` are (None when they differ, or there are none)."""
    found = set(values)
    return found.pop() if len(found) == 1 else None


def _bare(name: str) -> str:
    return naming.clean(name).lower().rstrip(".… ").removeprefix("nvidia ")


@lru_cache(maxsize=1)
def _default() -> GpuDatabase:
    rows = read_tsv(package_data("gpu_specs.tsv").read_text(encoding="utf-8"))
    return GpuDatabase([spec_from_row(r) for r in rows])


@lru_cache(maxsize=8)
def _with_file(path: Path, stamp: tuple) -> GpuDatabase:
    """(cached per file and its size and mtime: every layer asks for the database)"""
    return _default().with_overrides(path)


def load_database(overrides: Path | str | None = None) -> GpuDatabase:
    """The shipped database (cached), with a user's overrides file applied when given."""
    if overrides is None:
        return _default()
    path = Path(overrides)
    try:
        stat = path.stat()
        stamp = (stat.st_size, stat.st_mtime_ns)
    except OSError:
        stamp = ()
    return _with_file(path, stamp)


def match(device_name: str | None) -> GpuSpec | None:
    """Match against the shipped database."""
    return _default().match(device_name)


def unknown_gpu(name: str, db: GpuDatabase) -> str:
    """What is said of a GPU the user names that the table does not know (or that stands for
    several GPUs it gives no default for): no peaks, the nearest names it does know (or the
    GPUs meant), and how to add it."""
    several = db.named(name)
    if several:
        listed = ", ".join(spec.key for spec in several[:6]) + (" ..." if len(several) > 6 else "")
        return f"{name!r} may be any of {len(several)} GPUs ({listed}): no peaks (name one)"
    variants = db.other_variants(name)
    if variants:
        return (f"{name!r} names a variant the GPU table lacks (it has {', '.join(spec.key for spec in variants)}): "
                "no peaks (add it with --peaks)")
    near = db.closest(name)
    hint = f" (closest: {', '.join(near)})" if near else ""
    return f"{name!r} is not in the GPU table{hint}: no peaks (add it with --peaks)"
