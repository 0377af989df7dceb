"""How a GPU's name is compared: the spellings logs use, the cuts tools make, the tokens in paths.

A device name as the logs spell it (`Tesla V100-SXM2-16GB (0)`, `A100-SXM4-40GB`, `NVIDIA L40S`,
nvidia-smi's `GeForce RTX 208...`) or a path token (`a100/vgg11/...`, `..._k80_full`) stands for
the rows found by the first of these rules that finds any (`database.GpuDatabase.candidates`):

1. the whole name is a row's key or alias (case, `-`/`_`/space, a trailing device index ` (0)`
   and the `NVIDIA ` prefix that pre-R470 drivers omit do not matter; a bare model number, `A2`
   or `L4`, must carry `NVIDIA `: a folder named `a2` is no GPU, rule 4 reads path tokens);
2. the longest key or alias the name starts with, ending at a word boundary and followed by no
   word that makes it another GPU (`Ti`, `SUPER`, `Laptop GPU`, `with Max-Q Design`, `MIG
   1g.5gb`, `NVL`, `8GB`, a one-letter suffix as in `RTX 4090 D`): `NVIDIA L4` never matches
   `NVIDIA L40S`, `NVIDIA A10` never `NVIDIA A10G`, `Tesla V100` never `Tesla V100S`;
3. a cut name: nvidia-smi's `...` (`GeForce RTX 208...` is a 2080, 2080 SUPER or 2080 Ti), or a
   name of at least 15 characters that begins longer names (nvprof's trace keeps
   `Tesla V100-SXM2`, ncu's raw page `NVIDIA GeForce RTX`): every row with a name so begun;
4. GPU tokens (`data/gpu_tokens.tsv`, the one token table: run identity reads paths with it too)
   in a path or an odd spelling (`a100_vgg11`, `RTX3050TI`, `k80`): every row with a name
   holding the token as whole words, unless the next word makes it another product (`rtx3070`
   is a 3070 or a 3070 Laptop GPU, never a 3070 Ti; `v100` is any V100). Variant words after
   the token, a board (`SXM4`, `SXM`, `PCIe`, `DGXS`) or a memory size (`40GB`, `40 GB`,
   `32GiB`), keep the rows of that variant (`a100_40gb`: the A100 PCIe or SXM4 40GB;
   `v100-32gb`: a 32 GB V100); where the table has no row of that variant, the name stands for
   none (`variant_words`, `GpuDatabase.other_variants`), never for another variant.

A name that stands for one row names that GPU; one that stands for several names a product or a
choice the resolver settles (`resolve.py`).

A name a user types (`--gpu`, a roofreport.toml's `gpu =`) is also compared by its words
(`typed_words`, `GpuDatabase.named`): case, separators, vendor and product-line words (`NVIDIA`,
`Tesla`, `GeForce`, `AMD`, `Instinct`), `SXM` for `SXM4`, `80 GB` for `80GB` do not matter, the
words may come in any order, and a row whose other words make it another product (`Ti`, `D`) is
not meant: `A100 80GB` is the A100 SXM4 80GB or PCIe 80GB, `rtx 4090 nvidia` the RTX 4090 or its
laptop variant.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from roofreport.gpu.specs import read_tsv
from roofreport.resources import package_data

DEVICE_INDEX = re.compile(r"\s*\(\d+\)\s*$")        # `Tesla K80 (3)`: the device, not the model
CUT_MARK = re.compile(r"(?:\.\.\.|\u2026)\s*$")        # nvidia-smi's `GeForce RTX 208...`
SHORTEST_CUT = 15   # nvprof's trace keeps 15 characters of a name, ncu's raw page 18, nvidia-smi 15 + `...`
_BARE_MODEL = re.compile(r"[a-z]{1,2}\d{1,4}[a-z]?")  # `a2`, `l4`, `h200`: GPU only after `NVIDIA `
_BARE_INDEX = re.compile(r"\s*\d+\s*")                # a device column holding only `0`
# An AMD LLVM target where a device name stands (rocprof's agent `Name`, rocprof-compute's
# `gpu_arch`): a compute capability, not a name.
LLVM_TARGET = re.compile(r"\s*gfx[0-9a-f]{3,4}(?::\S*)?\s*", re.IGNORECASE)
# Words that, after a GPU's name, name another product (`RTX 3070 Ti`, `RTX 4090 D`, `with Max-Q
# Design`) or another variant of the same one (`Laptop GPU`, `MIG 1g.5gb`, `H200 NVL`, `T1000 8GB`).
_OTHER_PRODUCT = r"ti|super|oem|embedded|with|max|[a-z]"
_OTHER_VARIANT = r"laptop|mobile|mig|nvl\d*|\d+gb"
PRODUCT_WORD = re.compile(_OTHER_PRODUCT)
GPU_WORD = re.compile(f"{_OTHER_PRODUCT}|{_OTHER_VARIANT}")
# Words a user may add to or leave out of a GPU's name as the table spells it (`typed_words`).
_VENDOR_WORDS = frozenset(("nvidia", "tesla", "geforce", "amd", "instinct", "gpu"))
_MEMORY_SIZE = re.compile(r"\b(\d+) ?g(?:b|ib)?\b")   # `80 GB`, `80G`, `80GiB` -> `80gb`
_FORM_PREFIXES = ("sxm",)                               # `SXM` names SXM2, SXM4, SXM5 alike
# Words that make a row the portable variant of a product: a user naming the product means the
# desktop (or data-centre) one, as a datasheet does.
PORTABLE_WORDS = frozenset(("laptop", "mobile", "maxq"))

# Words after a GPU token that say which variant of the product it is (module docstring, rule 4):
# its board and its memory size, as folder and device names spell them (`a800_sxm4_40gb`,
# `Tesla V100-SXM2-16GB`, `NVIDIA A100 80GB PCIe`). Written for names as `words` spells them.
_BOARD = r"sxm\d?|pcie|dgxs"
_MEMORY = r"\d{1,3} ?gi?b"
_VARIANT_TAIL = re.compile(rf"(?: (?:{_BOARD}|{_MEMORY}))+$")
_MEMORY_WORD = re.compile(r"(\d{1,3}) ?gi?b")

# Words a path token may leave out of a GPU's name: `jetson_xavier` is an AGX Xavier or a Xavier NX.
_SKIPPABLE_WORDS = ("agx",)


def words(name: str) -> str:
    """Lower case, one space between words, no device index: `Tesla V100-SXM2-16GB (0)` ->
    `tesla v100 sxm2 16gb`."""
    text = DEVICE_INDEX.sub("", name.strip().lower())
    return re.sub(r"[-_\s]+", " ", text).strip()


def typed_words(name: str) -> tuple[str, ...]:
    """A GPU name's words as a user's name is compared (module docstring): `NVIDIA A100-SXM4
    80 GB` -> `a100 sxm4 80gb`."""
    text = _MEMORY_SIZE.sub(r"\1gb", words(name)).replace("pci e", "pcie").replace("max q", "maxq")
    return tuple(word for word in text.split() if word not in _VENDOR_WORDS)


def covers(typed: tuple[str, ...], row_words: tuple[str, ...]) -> bool:
    """Every word the user typed is a word of the row's name (`sxm` one beginning a word), and
    the row's other words make it no other product (`d` of `RTX 4090 D`, `Ti`)."""
    if not typed:
        return False
    matched: set[str] = set()
    for word in typed:
        found = [own for own in row_words
                 if own == word or (word in _FORM_PREFIXES and own.startswith(word))]
        if not found:
            return False
        matched.update(found)
    return not any(PRODUCT_WORD.fullmatch(own) for own in row_words if own not in matched)


def portable(row_words: tuple[str, ...]) -> bool:
    """The row is a laptop (mobile, Max-Q) variant."""
    return any(word in PORTABLE_WORDS for word in row_words)


def says_nothing(name: str | None) -> bool:
    """An empty device cell or one holding only a device index (`0`)."""
    return not name or _BARE_INDEX.fullmatch(name) is not None


def clean(name: str) -> str:
    """A logged name as a label shows it: without the device index (`Tesla K80 (3)`)."""
    return DEVICE_INDEX.sub("", name.strip())


def is_cut(name: str) -> bool:
    """The tool cut the name (nvidia-smi's `...`)."""
    return CUT_MARK.search(name.strip()) is not None


class Name(NamedTuple):
    """A name as matching compares it: its words without `nvidia `, and whether it said `NVIDIA `
    (a name like `NVIDIA A2` then matches only names that say it too)."""

    text: str
    vendor: bool

    @classmethod
    def of(cls, name: str, keep_end: bool = False) -> Name:
        spelled = words(name)
        vendor = spelled.startswith("nvidia ")
        text = spelled[len("nvidia "):] if vendor else spelled
        if keep_end and name[-1:] in " -_" and text:   # `GeForce GTX 1650 ...`: a word follows
            text += " "
        return cls(text, vendor)

    def bare(self) -> bool:
        return _BARE_MODEL.fullmatch(self.text) is not None

    def usable_for(self, asked: Name) -> bool:
        """This stored name may answer `asked` (a bare `NVIDIA A2` only a name saying NVIDIA)."""
        return asked.vendor or not (self.vendor and self.bare())


def continues(text: str, start: str) -> bool:
    """`text` is `start` and more words, the first of which names no other GPU (`tesla k10.g2.8gb`
    continues `tesla k10`; `geforce rtx 3070 ti` does not continue `geforce rtx 3070`)."""
    rest = text[len(start):]
    if not start or not text.startswith(start) or not rest or rest[0].isalnum():
        return False
    following = rest.split()
    return not (following and GPU_WORD.fullmatch(following[0]))


def word_runs(names: list[tuple[Name, object]]) -> dict[str, list]:
    """Every run of whole words of every name, spaces removed (`rtx3070`, `a100`, `titanxp`) ->
    the rows holding it, unless the word after it makes it another product (`rtx3070` + `ti`).
    `names`: (name, row) pairs; rows are told apart by their `key`."""
    runs: dict[str, dict[str, object]] = {}
    spellings = [(name.text.split(" "), spec) for name, spec in names]
    spellings += [([w for w in parts if w not in _SKIPPABLE_WORDS], spec) for parts, spec in spellings
                  if any(w in _SKIPPABLE_WORDS for w in parts)]
    for parts, spec in spellings:
        for start in range(len(parts)):
            for end in range(start + 1, len(parts) + 1):
                if end == len(parts) or not PRODUCT_WORD.fullmatch(parts[end]):
                    runs.setdefault("".join(parts[start:end]), {})[spec.key] = spec
    return {run: list(specs.values()) for run, specs in runs.items()}


class Variant(NamedTuple):
    """What the words after a GPU token say of its variant: the board words (`sxm4`, `pcie`) and
    the memory size in GB, when given."""

    boards: tuple[str, ...] = ()
    memory_gb: int | None = None

    def fits(self, row_words: tuple[str, ...], dram_gb: float | None, one_die: bool = False) -> bool:
        """A row with these name words and this much memory is the variant (`sxm` is any SXM
        board; the memory is the row's, or a size its names give: `NVIDIA GH200 480GB`). A row
        of one die of a board of several (`Tesla K80 (per GK210 GPU)`, `Instinct MI250X (per
        GCD)`: `one_die`) fits the board's memory too, a whole multiple of its own (`k80_24gb`,
        `mi250x_128gb`)."""
        for board in self.boards:
            if not any(own == board or (board in _FORM_PREFIXES and own.startswith(board)) for own in row_words):
                return False
        if self.memory_gb is None or f"{self.memory_gb}gb" in row_words:
            return True
        if not dram_gb:
            return False
        per_die = round(dram_gb)
        return self.memory_gb == per_die or (one_die and self.memory_gb % per_die == 0)


def variant_words(token: str) -> tuple[str, Variant]:
    """A GPU token as `token_pattern` finds it, parted into the product's words and what the
    words after them say of its variant: `a800 sxm4 40gb` -> (`a800`, (`sxm4`,), 40)."""
    tail = _VARIANT_TAIL.search(token)
    if tail is None:
        return token, Variant()
    product, boards, memory = token[:tail.start()], [], None
    for word in _MEMORY_WORD.sub(r"\1gb", tail.group(0)).split():
        size = _MEMORY_WORD.fullmatch(word)
        if size:
            memory = int(size.group(1))
        else:
            boards.append(word)
    return product, Variant(tuple(boards), memory)


def spelled_as_table(token: str, names: list[str]) -> str | None:
    """A path token (`JETSON ORIN`, `RTX3070`) as the first of `names` (the rows it stands for)
    spells its words: `Jetson Orin`, `RTX 3070`. A token standing for several GPUs is labelled
    with the table's words, never in the path's case. None when no name holds the token's words
    in a row (a word the token may leave out, `AGX`, is skipped)."""
    wanted = re.sub(r"[-_\s]+", "", token.lower())
    for name in names:
        parts = [w for w in re.split(r"[-_\s]+", DEVICE_INDEX.sub("", name.strip())) if w]
        kept = [w for w in parts if w.lower() not in _SKIPPABLE_WORDS]
        for spelling in (parts, kept):
            for start in range(len(spelling)):
                joined = ""
                for end in range(start, len(spelling)):
                    joined += spelling[end].lower()
                    if joined == wanted:
                        return " ".join(spelling[start:end + 1])
                    if not wanted.startswith(joined):
                        break
    return None


# -- GPU tokens (the one token table) ----------------------------------------------------------

@cache
def token_regexes() -> tuple[str, ...]:
    """The token table's regexes (`data/gpu_tokens.tsv`), written for lower-case names whose
    words one space parts (` ?` where a separator may be)."""
    return tuple(row["token_regex"] for row in read_tsv(package_data("gpu_tokens.tsv").read_text(encoding="utf-8")))


def token_alternatives(separator: str = " ") -> str:
    """The GPU tokens as one regex group (no capturing group), with an optional `laptop (gpu)`
    and up to two variant words (a board, a memory size: `variant_words`) after them, taken
    whole (an atomic group: `a100 sxm4 40gb mig` is no token, never `a100` alone);
    `separator`: what parts words (a space in names as `words` spells them, `[\\s_-]` in a raw
    file or folder name)."""
    alternatives = "|".join(f"(?:{regex})" for regex in token_regexes())
    variant = f"(?>(?: (?:{_BOARD}|{_MEMORY})){{0,2}})"
    return f"(?:{alternatives})(?: laptop(?: gpu)?)?{variant}".replace(" ", separator)


def not_another_gpu(separator: str = " ") -> str:
    """A lookahead: the token is not followed by a word that makes it another GPU (`a100 mig`,
    `rtx3070 ti`)."""
    return rf"(?!{separator}(?:{_OTHER_PRODUCT}|{_OTHER_VARIANT})(?:{separator}|$))"


@cache
def token_pattern() -> re.Pattern:
    """GPU tokens as whole words of a name as `words` spells it."""
    return re.compile(rf"(?<![a-z0-9]){token_alternatives()}(?![a-z0-9]){not_another_gpu()}")
