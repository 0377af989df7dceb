"""One training step of resnet18 and vgg11 as a list of kernels, forward, backward and optimizer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from samples.gpus import A100, BATCH, V100, Gpu
from samples.kernels import (
    Kernel,
    n_add,
    n_avgpool,
    n_bias_copy,
    n_bn,
    n_cast,
    n_conv,
    n_dropout,
    n_foreach,
    n_gemm,
    n_maxpool,
    n_mean,
    n_nll,
    n_relu,
    n_relu_bwd,
    n_softmax,
    n_sum_reduce,
    n_winograd_wgrad,
    sectors,
)

# -- model programs --------------------------------------------------------------------------

@dataclass
class Builder:
    """Accumulates one training iteration's launches for one GPU and precision."""

    gpu: Gpu
    prec: str                       # "half" (AMP) or "float"
    batch: int
    kernels: list[Kernel] = field(default_factory=list)
    phase: str = "forward"
    layer: str = ""

    @property
    def dt(self) -> int:
        return 2 if self.prec == "half" else 4

    def add(self, names: tuple[str, str, str], grid, block, **kw) -> Kernel:
        new, old, func = names
        k = Kernel(new, old, func, self.phase, self.layer, tuple(grid), tuple(block), **kw)
        k.dram, k.l2, k.l1 = sectors(k.dram), sectors(k.l2), sectors(k.l1)
        self.kernels.append(k)
        return k

    # elementwise and friends: bytes dominate
    def elementwise(self, names, elems: int, reads: int, writes: int, esize: int | None = None,
                    hadd: int = 0, fadd: int = 0, fmul: int = 0, ffma: int = 0, grid=None, block=None) -> Kernel:
        esize = esize or self.dt
        nbytes = elems * esize * (reads + writes)
        grid = grid or (max(1, math.ceil(elems / 512)), 1, 1)
        return self.add(names, grid, block or (128, 1, 1), regs=24,
                        hadd=hadd, fadd=fadd, fmul=fmul, ffma=ffma,
                        dram=nbytes, l2=nbytes * 1.06, l1=nbytes * 1.12, effm=0.82, overhead_ns=2100)

    def conv(self, direction: str, cin: int, cout: int, k: int, stride: int, hin: int) -> Kernel:
        hout = hin // stride
        m = self.batch * hout * hout
        macs = m * cout * cin * k * k
        act_in = self.batch * cin * hin * hin * self.dt
        act_out = self.batch * cout * hout * hout * self.dt
        weights = cout * cin * k * k * self.dt
        names = n_conv(self.gpu, self.prec, direction, cin, hout)
        tensor = self.prec == "half" or (self.gpu is A100 and not (cin == 3 and direction == "fprop"))
        winograd = names[2].startswith("volta_scudnn_winograd")
        # L2 traffic of an implicit GEMM: each operand re-read once per tile of the other side.
        l2 = act_in * max(1, cout // 128) + weights * max(1, m // 128) + act_out
        dram = (act_in + act_out + weights) * 1.25
        small = hout <= 14
        kw = dict(regs=168 if tensor else 128, smem_dyn=65536 if tensor else 0,
                  smem_static=0 if tensor else 17408, dram=dram, l2=max(l2, dram * 1.6),
                  l1=max(l2, dram * 1.6) * (1.18 if tensor else 2.1), effm=0.75, overhead_ns=3500)
        grid = (max(1, math.ceil(m / 128)), max(1, math.ceil(cout / 128)), 1)
        if tensor:
            path = "fp16" if self.prec == "half" else "tf32"
            out_elems = m * cout
            return self.add(names, grid, (128, 1, 1), tensor_flops=2 * macs, tensor_path=path,
                            fadd=out_elems, fmul=out_elems, eff=0.3 if small else 0.45, **kw)
        counted = 2 * macs * (0.46 if winograd else 1.0)
        ffma = int(counted / 2 * 0.985)
        return self.add(names, grid, (256, 1, 1), ffma=ffma, fadd=int(counted * 0.01),
                        fmul=int(counted * 0.005), eff=0.62 if winograd else 0.66, **kw)

    def bn(self, direction: str, c: int, hw: int) -> Kernel:
        elems = self.batch * c * hw * hw
        if direction == "fwd":
            return self.elementwise(n_bn("fwd"), elems, reads=1, writes=1, fadd=elems, ffma=2 * elems, fmul=elems)
        return self.elementwise(n_bn("bwd"), elems, reads=2, writes=1, fadd=2 * elems, ffma=3 * elems, fmul=elems)

    def gemm(self, op: str, m: int, n: int, kk: int) -> Kernel:
        macs = m * n * kk
        nbytes = (m * kk + kk * n + m * n) * self.dt
        names = n_gemm(self.gpu, self.prec, op)
        grid = (max(1, math.ceil(m / 64)), max(1, math.ceil(n / 64)), 1)
        if self.prec == "half":
            return self.add(names, grid, (128, 1, 1), regs=232, smem_dyn=81920, tensor_flops=2 * macs,
                            tensor_path="fp16", fadd=m * n, fmul=m * n, dram=nbytes * 1.1, l2=nbytes * 3,
                            l1=nbytes * 3.4, eff=0.35, overhead_ns=3000)
        return self.add(names, grid, (256, 1, 1), regs=122, smem_static=16384, ffma=macs, fmul=m * n,
                        dram=nbytes * 1.1, l2=nbytes * 4, l1=nbytes * 9, eff=0.66, overhead_ns=3000)


def resnet18_iteration(gpu: Gpu, batch: int = BATCH) -> list[Kernel]:
    """One AMP (fp16) training step of torchvision's resnet18 at 224x224, channels_last."""
    b = Builder(gpu, "half", batch)
    b.layer = "input"
    b.elementwise(n_cast(), batch * 3 * 224 * 224, reads=1, writes=1, esize=3)
    blocks = [("layer1.0", 64, 64, 1, 56), ("layer1.1", 64, 64, 1, 56), ("layer2.0", 64, 128, 2, 56),
              ("layer2.1", 128, 128, 1, 28), ("layer3.0", 128, 256, 2, 28), ("layer3.1", 256, 256, 1, 14),
              ("layer4.0", 256, 512, 2, 14), ("layer4.1", 512, 512, 1, 7)]
    b.layer = "conv1"
    _resnet_conv(b, 3, 64, 7, 2, 224)
    b.bn("fwd", 64, 112)
    b.elementwise(n_relu("half"), batch * 64 * 112 * 112, reads=1, writes=1)
    b.elementwise(n_maxpool("fwd", "nhwc", "half"), batch * 64 * 56 * 56, reads=4, writes=5)
    for name, cin, cout, stride, hin in blocks:
        b.layer = name
        _resnet_block_fwd(b, cin, cout, stride, hin)
    b.layer = "fc"
    b.elementwise(n_mean("fwd"), batch * 512 * 49, reads=1, writes=0)
    b.gemm("tn", 1000, batch, 512)
    _loss(b, "half")
    b.gemm("nn", 512, batch, 1000)
    b.gemm("nt", 512, 1000, batch)
    b.elementwise(n_sum_reduce(), batch * 1000, reads=1, writes=0, esize=4, fadd=batch * 1000)
    b.elementwise(n_mean("bwd"), batch * 512 * 49, reads=1, writes=1)
    for name, cin, cout, stride, hin in reversed(blocks):
        b.layer = name
        _resnet_block_bwd(b, cin, cout, stride, hin)
    b.layer = "conv1"
    b.elementwise(n_maxpool("bwd", "nhwc", "half"), batch * 64 * 112 * 112, reads=2, writes=1)
    b.elementwise(n_relu_bwd("half"), batch * 64 * 112 * 112, reads=2, writes=1)
    b.bn("bwd", 64, 112)
    b.conv("wgrad", 3, 64, 7, 2, 224)
    _optimizer(b, params=11_689_512, amp=True)
    return b.kernels


def _loss(b: Builder, dt: str) -> None:
    """log_softmax + nll_loss forward, then their backward (autocast runs both in float)."""
    n = b.batch * 1000
    warps = ((b.batch + 3) // 4, 1, 1), (32, 4, 1)
    b.elementwise(n_softmax("fwd", dt), n, reads=1, writes=2, fadd=3 * n, fmul=n, grid=warps[0], block=warps[1])
    b.elementwise(n_nll("fwd"), b.batch, reads=1, writes=1, esize=4, fadd=b.batch, grid=(1, 1, 1), block=(32, 1, 1))
    b.phase = "backward"
    b.elementwise(n_nll("bwd"), n, reads=1, writes=1, esize=4, grid=(1, 1, 1), block=(32, 1, 1))
    b.elementwise(n_softmax("bwd", dt), n, reads=2, writes=1, fadd=2 * n, fmul=2 * n, grid=warps[0], block=warps[1])


def _resnet_conv(b: Builder, cin, cout, k, stride, hin) -> None:
    # Autocast also casts each weight to half before its convolution; those tiny copies are
    # left out to keep the demo traces small.
    b.conv("fprop", cin, cout, k, stride, hin)


def _resnet_block_fwd(b: Builder, cin, cout, stride, hin) -> None:
    hout = hin // stride
    n = b.batch * cout * hout * hout
    _resnet_conv(b, cin, cout, 3, stride, hin)
    b.bn("fwd", cout, hout)
    b.elementwise(n_relu("half"), n, reads=1, writes=1)
    _resnet_conv(b, cout, cout, 3, 1, hout)
    b.bn("fwd", cout, hout)
    if stride != 1:
        _resnet_conv(b, cin, cout, 1, stride, hin)
        b.bn("fwd", cout, hout)
    b.elementwise(n_add("half"), n, reads=2, writes=1, hadd=n // 2)
    b.elementwise(n_relu("half"), n, reads=1, writes=1)


def _resnet_block_bwd(b: Builder, cin, cout, stride, hin) -> None:
    hout = hin // stride
    n = b.batch * cout * hout * hout
    b.elementwise(n_relu_bwd("half"), n, reads=2, writes=1)
    if stride != 1:
        b.bn("bwd", cout, hout)
        b.conv("dgrad", cin, cout, 1, stride, hin)
        b.conv("wgrad", cin, cout, 1, stride, hin)
    b.bn("bwd", cout, hout)
    b.conv("dgrad", cout, cout, 3, 1, hout)
    b.conv("wgrad", cout, cout, 3, 1, hout)
    b.elementwise(n_relu_bwd("half"), n, reads=2, writes=1)
    b.bn("bwd", cout, hout)
    b.conv("dgrad", cin, cout, 3, stride, hin)
    b.conv("wgrad", cin, cout, 3, stride, hin)
    b.elementwise(n_add("half"), b.batch * cin * hin * hin, reads=2, writes=1, hadd=b.batch * cin * hin * hin // 2)


def _optimizer(b: Builder, params: int, amp: bool) -> None:
    """SGD with momentum and weight decay, foreach implementation (one launch per op here)."""
    b.phase, b.layer = "optimizer", "sgd"
    if amp:
        b.elementwise(n_foreach("unscale"), params, reads=1, writes=1, esize=4, fmul=params)
    b.elementwise(n_foreach("add"), params, reads=2, writes=1, esize=4, ffma=params)        # grad += wd * p
    b.elementwise(n_foreach("mul"), params, reads=1, writes=1, esize=4, fmul=params)        # buf *= momentum
    b.elementwise(n_foreach("add"), params, reads=2, writes=1, esize=4, fadd=params)        # buf += grad
    b.elementwise(n_foreach("add"), params, reads=2, writes=1, esize=4, ffma=params)        # p -= lr * buf
    if amp:
        k = b.elementwise(n_foreach("update_scale"), 1, reads=1, writes=1, esize=4, fmul=2)
        k.grid = (1, 1, 1)


VGG11 = [(3, 64, 224, True), (64, 128, 112, True), (128, 256, 56, False), (256, 256, 56, True),
         (256, 512, 28, False), (512, 512, 28, True), (512, 512, 14, False), (512, 512, 14, True)]


CLASSIFIER = [(25088, 4096), (4096, 4096), (4096, 1000)]


def vgg11_iteration(gpu: Gpu, batch: int = BATCH) -> list[Kernel]:
    """One FP32 training step of torchvision's vgg11 (TF32 convolutions on the A100)."""
    b = Builder(gpu, "float", batch)
    for i, (cin, cout, hw, pool) in enumerate(VGG11):
        b.layer = f"features.conv{i + 1}"
        b.conv("fprop", cin, cout, 3, 1, hw)
        b.elementwise(n_relu("float"), batch * cout * hw * hw, reads=1, writes=1)
        if pool:
            b.elementwise(n_maxpool("fwd", "nchw", "float"), batch * cout * (hw // 2) ** 2, reads=4, writes=3)
    b.layer = "avgpool"
    b.elementwise(n_avgpool("fwd"), batch * 512 * 49, reads=1, writes=1, fadd=batch * 512 * 49)
    _classifier_fwd(b)
    b.layer = "loss"
    _loss(b, "float")
    _classifier_bwd(b)
    b.layer = "avgpool"
    b.elementwise(n_avgpool("bwd"), batch * 512 * 49, reads=1, writes=1, fadd=batch * 512 * 49)
    for i, (cin, cout, hw, pool) in reversed(list(enumerate(VGG11))):
        b.layer = f"features.conv{i + 1}"
        _vgg_conv_bwd(b, cin, cout, hw, pool)
    _optimizer(b, params=132_863_336, amp=False)
    return b.kernels


def _classifier_fwd(b: Builder) -> None:
    """addmm: the bias is copied into the output, then cuBLAS accumulates onto it."""
    for i, (fin, fout) in enumerate(CLASSIFIER):
        b.layer = f"classifier.fc{i + 1}"
        b.elementwise(n_bias_copy(), b.batch * fout, reads=0, writes=1)
        b.gemm("tn", fout, b.batch, fin)
        if fout == 4096:
            b.elementwise(n_relu("float"), b.batch * fout, reads=1, writes=1)
            b.elementwise(n_dropout("fwd"), b.batch * fout, reads=1, writes=2, fmul=b.batch * fout)


def _classifier_bwd(b: Builder) -> None:
    for i, (fin, fout) in reversed(list(enumerate(CLASSIFIER))):
        b.layer = f"classifier.fc{i + 1}"
        if fout == 4096:
            b.elementwise(n_dropout("bwd"), b.batch * fout, reads=2, writes=1, fmul=b.batch * fout)
            b.elementwise(n_relu_bwd("float"), b.batch * fout, reads=2, writes=1)
        b.gemm("nn", fin, b.batch, fout)
        b.gemm("nt", fin, fout, b.batch)
        b.elementwise(n_sum_reduce(), b.batch * fout, reads=1, writes=0, fadd=b.batch * fout)


def _vgg_conv_bwd(b: Builder, cin: int, cout: int, hw: int, pool: bool) -> None:
    elems = b.batch * cout * hw * hw
    if pool:
        b.elementwise(n_maxpool("bwd", "nchw", "float"), elems, reads=2, writes=1)
    b.elementwise(n_relu_bwd("float"), elems, reads=2, writes=1)
    if cin != 3:
        b.conv("dgrad", cin, cout, 3, 1, hw)
    if b.gpu is V100 and hw >= 56:
        _winograd_wgrad(b, cin, cout, hw)
    else:
        b.conv("wgrad", cin, cout, 3, 1, hw)
    b.elementwise(n_sum_reduce(), elems, reads=1, writes=0, fadd=elems)


def _winograd_wgrad(b: Builder, cin: int, cout: int, hw: int) -> None:
    """cuDNN's non-fused Winograd weight gradient: transform data and deltas, batched GEMM, output."""
    tiles = b.batch * (hw // 4) ** 2 * 36
    b.elementwise(n_winograd_wgrad("Data"), tiles * cin, reads=1, writes=1, fadd=tiles * cin * 4, fmul=tiles * cin)
    b.elementwise(n_winograd_wgrad("Delta"), tiles * cout, reads=1, writes=1, fadd=tiles * cout * 4)
    b.gemm("nt", cout, cin * 36, b.batch * (hw // 4) ** 2)
    b.elementwise(n_winograd_wgrad("Output"), cout * cin * 36, reads=1, writes=1, fadd=cout * cin * 40)
