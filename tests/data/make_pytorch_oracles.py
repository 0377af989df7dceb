"""Regenerate the PyTorch oracle traces under tests/data/kineto_oracles/ (needs torch; it is not
a dependency of roofreport: install it in a scratch venv, `pip install torch==2.13.0`).

    python tests/data/make_pytorch_oracles.py [--out tests/data/kineto_oracles]

For each model, in bf16 on the CPU: one training step (forward, backward, optimizer) runs
under `torch.utils.flop_counter.FlopCounterMode` in eager mode, whose total is the oracle; then
`torch.profiler` (`ProfilerActivity.CPU`, `record_shapes=True`) records two steps
(`ProfilerStep#2`, `#3`) of the same training loop, eager and under `torch.compile`: a
compiled step does the same matrix math, so the counter run eagerly is the oracle of both.

* `gpt`: a GPT-style decoder (token and position embeddings, pre-norm blocks of causal
  scaled-dot-product attention and a GELU MLP, a tied-free LM head);
* `gpt-checkpoint`: the same with every block under `torch.utils.checkpoint` (non-reentrant,
  early stop off): the counter counts the recomputed forward too (hardware FLOPs), and the
  `gpt` count is the model FLOPs;
* `cnn`: convolutions of several kinds (padding given and "same", stride, dilation, groups, a
  transposed convolution), batch norm, pooling and a linear head.

(`with_flops=True` adds no `flops` args to a CPU trace of torch 2.13: only `"with_flops": 1` at
the top. The reader's use of such args is tested on a hand-made trace.)

The CPU build runs attention as `aten::_scaled_dot_product_flash_attention_for_cpu` (and its
backward), which FlopCounterMode does not register: the counter is given them with its own
SDPA formulas (`custom_mapping`), as roofreport counts them.

Written: `<model>/<mode>.pt.trace.json.gz`, `<model>/flop_counter.json` (FlopCounterMode's
per-operator counts, the layout of `get_flop_counts()` with operator names as text, and the
total per step) and `counts.json` (every model's total, the test's oracle).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop, sdpa_flop

HERE = Path(__file__).resolve().parent
ATEN = torch.ops.aten
CPU_ATTENTION = {ATEN._scaled_dot_product_flash_attention_for_cpu: sdpa_flop.__wrapped__,
                 ATEN._scaled_dot_product_flash_attention_for_cpu_backward: sdpa_backward_flop.__wrapped__}


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        batch, tokens, width = x.shape
        query, key, value = self.qkv(self.norm1(x)).split(width, dim=2)
        query, key, value = (t.view(batch, tokens, self.heads, width // self.heads).transpose(1, 2)
                             for t in (query, key, value))
        attended = F.scaled_dot_product_attention(query, key, value, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, tokens, width))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=256, width=64, heads=4, layers=2, tokens=32, checkpointed=False):
        super().__init__()
        self.checkpointed = checkpointed
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(tokens, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        # Early stop off: recomputation runs the whole block again (with it, the operator at
        # which it stops shows in the trace without having run, and the counter leaves it out)
        with set_checkpoint_early_stop(False):
            for block in self.blocks:
                x = checkpoint(block, x, use_reentrant=False) if self.checkpointed else block(x)
        return self.head(self.norm(x))


class CNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.down = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.grouped = nn.Conv2d(32, 32, 3, padding="same", groups=4)
        self.dilated = nn.Conv2d(32, 32, 3, padding=2, dilation=2)
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.norm = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(self.grouped(self.down(x)))
        x = F.relu(self.norm(self.up(self.dilated(x))))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def gpt_task(checkpointed: bool):
    model = GPT(checkpointed=checkpointed).to(torch.bfloat16)
    ids, targets = torch.randint(0, 256, (4, 32)), torch.randint(0, 256, (4, 32))
    return model, ids, lambda out: F.cross_entropy(out.flatten(0, 1).float(), targets.flatten())


def cnn_task():
    model = CNN().to(torch.bfloat16)
    images, labels = torch.randn(8, 3, 32, 32, dtype=torch.bfloat16), torch.randint(0, 10, (8,))
    return model, images, lambda out: F.cross_entropy(out.float(), labels)


def training_step(model, forward, batch, loss_of, optimizer):
    def step():
        loss_of(forward(batch)).backward()
        optimizer.step()
        optimizer.zero_grad()
    return step


def counted(model, batch, loss_of) -> tuple[int, dict]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    step = training_step(model, model, batch, loss_of, optimizer)
    step()
    with FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION) as counter:
        step()
    counts = {scope: {str(op): int(n) for op, n in ops.items()} for scope, ops in counter.get_flop_counts().items()}
    return counter.get_total_flops(), counts


def trace(model, batch, loss_of, out: Path, compiled: bool) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    forward = torch.compile(model) if compiled else model
    step = training_step(model, forward, batch, loss_of, optimizer)
    step()   # (compiles)
    with tempfile.TemporaryDirectory() as scratch:
        raw = Path(scratch) / "trace.json"
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                     on_trace_ready=lambda prof: prof.export_chrome_trace(str(raw))) as prof:
            for _ in range(4):
                step()
                prof.step()
        with raw.open("rb") as source, out.open("wb") as packed, \
                gzip.GzipFile(fileobj=packed, mode="wb", mtime=0) as target:
            shutil.copyfileobj(source, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "kineto_oracles")
    args = parser.parse_args()
    totals = {}
    tasks = {"gpt": lambda: gpt_task(False), "gpt-checkpoint": lambda: gpt_task(True), "cnn": cnn_task}
    modes = {"gpt": [("eager", False), ("compiled", True)], "gpt-checkpoint": [("eager", False)],
             "cnn": [("eager", False), ("compiled", True)]}
    for name, make in tasks.items():
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)
        total, counts = counted(*make())
        totals[name] = total
        if name != "gpt-checkpoint":   # (its count holds the recomputation: not model FLOPs)
            (folder / "flop_counter.json").write_text(json.dumps(counts, indent=1) + "\n")
        for mode, compiled in modes[name]:
            torch.manual_seed(0)
            trace(*make(), folder / f"{mode}.pt.trace.json.gz", compiled)
    (args.out / "counts.json").write_text(json.dumps(
        {"torch": torch.__version__, "flop_counter_total_per_step": totals}, indent=1) + "\n")
    print(json.dumps(totals, indent=1))


if __name__ == "__main__":
    main()
