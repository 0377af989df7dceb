"""FLOPs of one PyTorch operator call from the shapes a trace records (`record_shapes=True`).

The formulas are those of `torch.utils.flop_counter` (`FlopCounterMode`), so an estimate from
a trace and the counter run on the same step agree:

* matrix products, 2·m·k·n per product (a multiply and an add per term; the counter's own
  note: strictly 2k-1): `aten::mm` [m,k]·[k,n], `aten::addmm` (bias, a, b; the bias add is not
  counted), `aten::bmm` and `aten::baddbmm` b·2·m·k·n, `aten::_scaled_mm` (FP8), and the
  composite `aten::linear` (input [..., k], weight [n, k]: 2·rows·k·n) and `aten::matmul`
  (broadcast batch · 2·m·k·n). A matrix-vector product counts nothing: the counter registers
  no `mv` or `dot`, and `matmul` with a 1-D right operand becomes one of them;
* convolutions, 2·N·C_out·(C_in/groups)·prod(kernel)·prod(output spatial) (bias not counted;
  a transposed convolution takes the input's spatial size instead of the output's):
  `aten::convolution`, `aten::_convolution`, `aten::cudnn_convolution`,
  `aten::_slow_conv2d_forward`, `aten::convolution_overrideable` and `aten::conv1d/2d/3d`.
  A trace holds no output shapes: the output's spatial size comes from the stride, padding and
  dilation the trace's `Concrete Inputs` give; without them the call is not counted. The
  backward, `aten::convolution_backward`, needs no output size: the gradient of the input (a
  transposed convolution of the output's gradient) and of the weight (a convolution of the
  input with the output's gradient), each as the counter writes it, by `output_mask` (both
  when the trace does not say);
* attention, 2 products of 2·b·h·s_q·d·s_k each forward (Q·Kᵀ, then P·V), 5 backward (the
  scores recomputed, and the gradients of P, V, Q and K): the `_scaled_dot_product_{flash,
  efficient,cudnn}_attention` ops and their `_backward`, and the CPU build's
  `_scaled_dot_product_flash_attention_for_cpu` (and `_backward`), which the counter leaves out
  unless given them (`tests/data/make_pytorch_oracles.py` gives them the same formulas). Grouped
  KV heads (GQA) count the query's heads, as the counter does. Causal masking is not in the
  shapes: a causal attention is counted in full, as the counter counts it, although about half
  of the products are skipped; `causal` says so.

`Trace` events of other operators count nothing here (elementwise work, reductions). Where a
trace carries the profiler's own `flops` argument (`with_flops=True`: `aten::mm`, `addmm`,
`bmm`, `baddbmm`, `conv2d`), that value is used for the call instead of the formula, and the
call's source says so.

Each call is counted once: a counted call's children are not (`steps.py` walks the nesting).
`aten::linear` is counted, and the `aten::addmm` under it is not; where a composite call cannot
be counted (no concrete inputs), its children are.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

MATMUL, ATTENTION, CONV = "matmul", "attention", "conv"
KINDS = (MATMUL, ATTENTION, CONV)

# `Input type` strings -> the precision names the steps table uses.
DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
          "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
          "c10::Float8_e5m2fnuz": "fp8"}

# Ops run as forward work; met inside a backward node (`autograd::engine::evaluate_function:`),
# they recompute activations (activation checkpointing): hardware FLOPs, not model FLOPs.
# (`mm`/`bmm` are what backward formulas call; `addmm`/`baddbmm` are left out too: a
# compiled backward graph may fuse a gradient's add into them.)
FORWARD_OPS = frozenset({
    "aten::linear", "aten::matmul", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
    "aten::_convolution", "aten::cudnn_convolution", "aten::_slow_conv2d_forward",
    "aten::convolution_overrideable", "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_flash_attention_forward",
    "aten::_efficient_attention_forward"})

Dims = list
Formula = Callable[[list, list], "float | None"]


def _matrix(dims, index: int) -> list | None:
    shape = dims[index] if len(dims) > index else None
    return shape if isinstance(shape, list) and all(isinstance(n, int) for n in shape) else None


def _mm(first: list | None, second: list | None) -> float | None:
    if first is None or second is None or len(first) != 2 or len(second) != 2:
        return None
    return 2.0 * first[0] * first[1] * second[1]


def _bmm(first: list | None, second: list | None) -> float | None:
    if first is None or second is None or len(first) != 3 or len(second) != 3:
        return None
    return 2.0 * first[0] * first[1] * first[2] * second[2]


def mm(dims, concrete):
    return _mm(_matrix(dims, 0), _matrix(dims, 1))


def addmm(dims, concrete):
    return _mm(_matrix(dims, 1), _matrix(dims, 2))


def bmm(dims, concrete):
    return _bmm(_matrix(dims, 0), _matrix(dims, 1))


def baddbmm(dims, concrete):
    return _bmm(_matrix(dims, 1), _matrix(dims, 2))


def linear(dims, concrete):
    """input [..., k] · weight [n, k]ᵀ."""
    data, weight = _matrix(dims, 0), _matrix(dims, 1)
    if not data or weight is None or len(weight) != 2:
        return None
    return 2.0 * prod(data[:-1]) * data[-1] * weight[0]


def matmul(dims, concrete):
    """The products `torch.matmul` runs: none for a vector on the right (mv, dot); batch
    dimensions broadcast."""
    first, second = _matrix(dims, 0), _matrix(dims, 1)
    if not first or not second:
        return None
    if len(second) == 1:
        return 0.0
    if len(first) == 1:
        first = [1, first[0]]
    batch_a, batch_b = first[:-2], second[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a, batch_b = [1] * (width - len(batch_a)) + batch_a, [1] * (width - len(batch_b)) + batch_b
    return 2.0 * prod(max(a, b) for a, b in zip(batch_a, batch_b)) * first[-2] * first[-1] * second[-1]


# -- convolutions ----------------------------------------------------------------------------

def _numbers(text) -> list[int] | None:
    """A concrete input as a list of ints: `"[1, 1]"`, `"2"`, or a JSON list."""
    if isinstance(text, list):
        values = text
    elif isinstance(text, (int, float)) and not isinstance(text, bool):
        values = [text]
    elif isinstance(text, str) and text.strip():
        values = [v for v in text.strip().strip("[]()").split(",") if v.strip()]
    else:
        return None
    try:
        return [int(float(v)) for v in values]
    except (TypeError, ValueError):
        return None


def _flag(text) -> bool | None:
    if isinstance(text, bool):
        return text
    return {"true": True, "false": False, "1": True, "0": False}.get(str(text).strip().lower())


def _flags(text) -> list[bool] | None:
    if isinstance(text, list):
        return [bool(v) for v in text]
    if not isinstance(text, str) or not text.strip():
        return None
    values = [_flag(v) for v in text.strip().strip("[]()").split(",")]
    return None if any(v is None for v in values) else values


def _at(concrete, index: int):
    return concrete[index] if isinstance(concrete, list) and len(concrete) > index else None


def _per_axis(values: list[int] | None, axes: int) -> list[int] | None:
    if values is None or not values:
        return None
    return values * axes if len(values) == 1 else values if len(values) == axes else None


def conv_count(data: list, weight: list, out_spatial: list, transposed: bool) -> float:
    """`flop_counter.conv_flop_count`: 2 · N · C_out · C_in(weight) · prod(kernel) ·
    prod(spatial), the spatial size being the output's, or the input's when transposed."""
    spatial = data[2:] if transposed else out_spatial
    return 2.0 * data[0] * prod(spatial) * prod(weight[2:]) * weight[0] * weight[1]


def _conv(dims, concrete, positions: tuple[int, int, int, int | None]) -> float | None:
    """A forward convolution; `positions` of stride, padding, dilation and transposed among
    its arguments (None: never transposed)."""
    data, weight = _matrix(dims, 0), _matrix(dims, 1)
    if not data or not weight or len(data) != len(weight) or len(data) < 3:
        return None
    stride_at, padding_at, dilation_at, transposed_at = positions
    transposed = bool(_flag(_at(concrete, transposed_at))) if transposed_at is not None else False
    if transposed:
        return conv_count(data, weight, [], True)
    axes = len(data) - 2
    padding_text = _at(concrete, padding_at)
    if isinstance(padding_text, str) and padding_text.strip().strip("'\"") in ("same", "valid"):
        padding = None if padding_text.strip().strip("'\"") == "same" else [0] * axes
    else:
        padding = _per_axis(_numbers(padding_text), axes)
    stride = _per_axis(_numbers(_at(concrete, stride_at)), axes)
    dilation = _per_axis(_numbers(_at(concrete, dilation_at)), axes) or ([1] * axes)
    if stride is None or (padding is None and not _same(padding_text)):
        return None
    if padding is None:   # "same": the output keeps the input's size (stride 1)
        return conv_count(data, weight, data[2:], False)
    out = [(size + 2 * pad - dil * (kernel - 1) - 1) // step + 1
           for size, pad, dil, kernel, step in zip(data[2:], padding, dilation, weight[2:], stride)]
    return conv_count(data, weight, out, False) if all(n > 0 for n in out) else None


def _same(text) -> bool:
    return isinstance(text, str) and text.strip().strip("'\"") == "same"


def conv_backward(dims, concrete):
    """`flop_counter.conv_backward_flop`: (grad_output, input, weight, bias_sizes, stride,
    padding, dilation, transposed, output_padding, groups, output_mask)."""
    grad, data, weight = _matrix(dims, 0), _matrix(dims, 1), _matrix(dims, 2)
    if not grad or not data or not weight or not len(grad) == len(data) == len(weight) >= 3:
        return None
    transposed = bool(_flag(_at(concrete, 7)))
    mask = _flags(_at(concrete, 10)) or [True, True]

    def swap(shape):
        return [shape[1], shape[0], *shape[2:]]

    total = 0.0
    if mask[0]:   # the input's gradient, a convolution of the output's gradient
        total += conv_count(grad, weight, data[2:], not transposed)
    if len(mask) > 1 and mask[1]:   # the weight's gradient
        first, second = (swap(grad), swap(data)) if transposed else (swap(data), swap(grad))
        total += conv_count(first, second, weight[2:], False)
    return total


# -- attention -------------------------------------------------------------------------------

def _attention_shapes(dims, first: int, heads_second: bool) -> tuple | None:
    """(b, h_q, s_q, d_q, h_kv, s_k, d_v) of query, key and value at `first`..first+2; laid out
    [b, h, s, d] by the SDPA ops, [b, s, h, d] by the `_flash/_efficient_attention` ones."""
    shapes = [_matrix(dims, first + i) for i in range(3)]
    if any(s is None or len(s) != 4 for s in shapes):
        return None
    if not heads_second:
        shapes = [[s[0], s[2], s[1], s[3]] for s in shapes]
    query, key, value = shapes
    return query[0], query[1], query[2], query[3], key[1], key[2], value[3]


def _sdpa(shapes: tuple | None, backward: bool) -> float | None:
    if shapes is None:
        return None
    batch, heads, s_q, d_q, _, s_k, d_v = shapes
    products = batch * heads * (2.0 * s_q * d_q * s_k + 2.0 * s_q * s_k * d_v)
    if not backward:
        return products
    # recomputed scores, grad of P, grad of V, grad of Q, grad of K (`sdpa_backward_flop_count`)
    return batch * heads * 2.0 * (s_q * d_q * s_k + s_q * d_v * s_k + s_k * s_q * d_v
                                  + s_q * s_k * d_q + d_q * s_q * s_k)


def sdpa(dims, concrete):
    return _sdpa(_attention_shapes(dims, 0, True), False)


def sdpa_backward(dims, concrete):   # (grad_out, query, key, value, ...)
    return _sdpa(_attention_shapes(dims, 1, True), True)


def flash_forward(dims, concrete):   # `_flash/_efficient_attention_forward`: [b, s, h, d]
    return _sdpa(_attention_shapes(dims, 0, False), False)


def flash_backward(dims, concrete):   # (grad_out, query, key, value, ...), [b, s, h, d]
    return _sdpa(_attention_shapes(dims, 1, False), True)


# Operator -> (kind, formula, index of the operand whose type is the call's precision,
# index of `is_causal` among the concrete inputs or None).
FORMULAS: dict[str, tuple[str, Formula, int, int | None]] = {
    "aten::mm": (MATMUL, mm, 0, None),
    "aten::addmm": (MATMUL, addmm, 1, None),
    "aten::bmm": (MATMUL, bmm, 0, None),
    "aten::baddbmm": (MATMUL, baddbmm, 1, None),
    "aten::_scaled_mm": (MATMUL, mm, 0, None),
    "aten::linear": (MATMUL, linear, 0, None),
    "aten::matmul": (MATMUL, matmul, 0, None),
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
    "aten::convolution": (CONV, lambda d, c: _conv(d, c, (3, 4, 5, 6)), 0, None),
    "aten::_convolution": (CONV, lambda d, c: _conv(d, c, (3, 4, 5, 6)), 0, None),
    "aten::convolution_overrideable": (CONV, lambda d, c: _conv(d, c, (3, 4, 5, 6)), 0, None),
    # (input, weight, padding, stride, dilation, groups, ...): no bias
    "aten::cudnn_convolution": (CONV, lambda d, c: _conv(d, c, (3, 2, 4, None)), 0, None),
    # (input, weight, kernel_size, bias, stride, padding)
    "aten::_slow_conv2d_forward": (CONV, lambda d, c: _conv(d, c, (4, 5, None, None)), 0, None),
    # (input, weight, bias, stride, padding, dilation, groups)
    "aten::conv1d": (CONV, lambda d, c: _conv(d, c, (3, 4, 5, None)), 0, None),
    "aten::conv2d": (CONV, lambda d, c: _conv(d, c, (3, 4, 5, None)), 0, None),
    "aten::conv3d": (CONV, lambda d, c: _conv(d, c, (3, 4, 5, None)), 0, None),
    "aten::convolution_backward": (CONV, conv_backward, 1, None),
    "aten::_scaled_dot_product_flash_attention": (ATTENTION, sdpa, 0, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (ATTENTION, sdpa, 0, 4),
    "aten::_scaled_dot_product_efficient_attention": (ATTENTION, sdpa, 0, 6),
    "aten::_scaled_dot_product_cudnn_attention": (ATTENTION, sdpa, 0, 6),
    "aten::_scaled_dot_product_flash_attention_backward": (ATTENTION, sdpa_backward, 1, 11),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": (ATTENTION, sdpa_backward, 1, 7),
    "aten::_scaled_dot_product_efficient_attention_backward": (ATTENTION, sdpa_backward, 1, 11),
    "aten::_scaled_dot_product_cudnn_attention_backward": (ATTENTION, sdpa_backward, 1, 14),
    "aten::_flash_attention_forward": (ATTENTION, flash_forward, 0, 8),
    "aten::_efficient_attention_forward": (ATTENTION, flash_forward, 0, None),
    "aten::_flash_attention_backward": (ATTENTION, flash_backward, 1, None),
    "aten::_efficient_attention_backward": (ATTENTION, flash_backward, 1, None),
}
NAMES = frozenset(FORMULAS)
# Sources of a call's FLOPs.
SHAPES, TRACE = "shapes", "trace"


def op_flops(name: str, args: dict) -> tuple[float | None, str, str | None, str | None, bool]:
    """(FLOPs or None when the args cannot give them, kind, precision, source, causal) of one
    call of an operator in `FORMULAS`, from its event's `args`."""
    kind, formula, typed, causal_at = FORMULAS[name]
    types = args.get("Input type")
    precision = DTYPES.get(types[typed]) if isinstance(types, list) and len(types) > typed else None
    concrete = args.get("Concrete Inputs")
    causal = causal_at is not None and _flag(_at(concrete, causal_at)) is True
    given = args.get("flops")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0:
        return float(given), kind, precision, TRACE, causal
    dims = args.get("Input Dims", args.get("Input dims"))
    if not isinstance(dims, list):
        return None, kind, precision, None, causal
    try:
        value = formula(dims, concrete)
    except (TypeError, ValueError, IndexError, OverflowError):
        value = None
    return value, kind, precision, SHAPES if value is not None else None, causal
