"""Transformer operators written once in OpenCL C (ops.cl), shipped as one .ubin
(build.py) and registered as PyTorch custom operators ``spirvjit_ops::*`` with
``spirvjit.torch``: gelu, softmax (with backward kernels), layer_norm, linear,
attention_scores and bmm. float32, any shapes; CPU tensors run in place, CUDA/ROCm
tensors on the spirvjit GPU of the same index.

    from torch_ops import load
    ops = load()            # builds torch_ops.ubin when missing; registers the operators
    y = ops.gelu(x)         # or torch.ops.spirvjit_ops.gelu(x)
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import torch

import spirvjit
import spirvjit.torch as sjt

from .build import UBIN, build

TILE = 16  # ops.cl's TILE
GROUP = 64  # ops.cl's GROUP

_lock = threading.Lock()
_ops: SimpleNamespace | None = None


def _float32(*tensors: torch.Tensor) -> None:
    # Some of ops.cl's pointer arguments reach the module without their element type
    # (clang's SPIR-V, issue 12), so the launch cannot check them all: check here.
    for t in tensors:
        if t.dtype != torch.float32:
            raise TypeError(f"the spirvjit_ops operators take float32 tensors, got {t.dtype}")


def _up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def _register(prog: spirvjit.Program) -> SimpleNamespace:
    def matmul_grid(m: int, n: int, batch: int) -> dict:
        return {"global_size": (_up(n, TILE), _up(m, TILE), batch), "local_size": (TILE, TILE, 1)}

    # ---- gelu, with a backward kernel ------------------------------------------------
    def gelu_backward_impl(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        _float32(grad, x)
        grad, x = grad.contiguous(), x.contiguous()
        out = torch.empty_like(x)
        if x.numel():
            sjt.launch(prog.gelu_backward, out, grad, x, x.numel(), global_size=x.numel())
        return out

    gelu_backward = sjt.custom_op(
        "spirvjit_ops::gelu_backward", gelu_backward_impl, fake=lambda g, x: torch.empty_like(x)
    )

    def gelu_impl(x: torch.Tensor) -> torch.Tensor:
        _float32(x)
        x = x.contiguous()
        out = torch.empty_like(x)
        if x.numel():
            sjt.launch(prog.gelu, out, x, x.numel(), global_size=x.numel())
        return out

    def gelu_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def gelu_grad(ctx, grad):
        (x,) = ctx.saved_tensors
        return gelu_backward(grad, x)

    gelu = sjt.custom_op(
        "spirvjit_ops::gelu",
        gelu_impl,
        fake=lambda x: torch.empty_like(x),
        backward=gelu_grad,
        setup_context=gelu_setup,
    )

    # ---- softmax over the last dimension, with a backward kernel ----------------------
    def rows_cols(x: torch.Tensor) -> tuple[int, int]:
        cols = x.shape[-1] if x.dim() else 1
        return (x.numel() // cols if cols else 0), cols

    def softmax_backward_impl(grad: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        _float32(grad, y)
        grad, y = grad.contiguous(), y.contiguous()
        out = torch.empty_like(y)
        rows, cols = rows_cols(y)
        if rows and cols:
            sjt.launch(prog.softmax_backward, out, grad, y, cols, global_size=rows * GROUP)
        return out

    softmax_backward = sjt.custom_op(
        "spirvjit_ops::softmax_backward",
        softmax_backward_impl,
        fake=lambda g, y: torch.empty_like(y),
    )

    def softmax_impl(x: torch.Tensor) -> torch.Tensor:
        _float32(x)
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = rows_cols(x)
        if rows and cols:
            sjt.launch(prog.softmax, out, x, cols, global_size=rows * GROUP)
        return out

    def softmax_setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def softmax_grad(ctx, grad):
        (y,) = ctx.saved_tensors
        return softmax_backward(grad, y)

    softmax = sjt.custom_op(
        "spirvjit_ops::softmax",
        softmax_impl,
        fake=lambda x: torch.empty_like(x),
        backward=softmax_grad,
        setup_context=softmax_setup,
    )

    # ---- layer norm over the last dimension -------------------------------------------
    def layer_norm_impl(
        x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float
    ) -> torch.Tensor:
        _float32(x, weight, bias)
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = rows_cols(x)
        if rows and cols:
            sjt.launch(
                prog.layer_norm,
                out,
                x,
                weight.contiguous(),
                bias.contiguous(),
                cols,
                float(eps),
                global_size=rows * GROUP,
            )
        return out

    layer_norm = sjt.custom_op(
        "spirvjit_ops::layer_norm",
        layer_norm_impl,
        fake=lambda x, w, b, eps: torch.empty_like(x),
    )

    # ---- linear: x @ weight^T + bias, weight in torch's (out, in) layout --------------
    def linear_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        _float32(x, weight, bias)
        x, weight, bias = x.contiguous(), weight.contiguous(), bias.contiguous()
        k, n = x.shape[-1], weight.shape[0]
        m = x.numel() // k if k else 0
        out = x.new_empty((*x.shape[:-1], n))
        if m and n:
            sjt.launch(prog.matmul_nt, out, x, weight, bias, m, n, k, 1.0, **matmul_grid(m, n, 1))
        return out

    linear = sjt.custom_op(
        "spirvjit_ops::linear",
        linear_impl,
        fake=lambda x, w, b: x.new_empty((*x.shape[:-1], w.shape[0])),
    )

    # ---- attention scores q @ k^T * scale and bmm, batched over leading dims ----------
    def attention_scores_impl(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
        _float32(q, k)
        q, k = q.contiguous(), k.contiguous()
        m, n, d = q.shape[-2], k.shape[-2], q.shape[-1]
        batch = q.numel() // (m * d) if m * d else 0
        out = q.new_empty((*q.shape[:-2], m, n))
        if batch and m and n:
            sjt.launch(
                prog.matmul_nt, out, q, k, None, m, n, d, float(scale), **matmul_grid(m, n, batch)
            )
        elif out.numel():
            out.zero_()  # d == 0: empty sums
        return out

    attention_scores = sjt.custom_op(
        "spirvjit_ops::attention_scores",
        attention_scores_impl,
        fake=lambda q, k, s: q.new_empty((*q.shape[:-2], q.shape[-2], k.shape[-2])),
    )

    def bmm_impl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        _float32(a, b)
        a, b = a.contiguous(), b.contiguous()
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        batch = a.numel() // (m * k) if m * k else 0
        out = a.new_zeros((*a.shape[:-2], m, n))
        if batch and m and n:
            sjt.launch(prog.matmul, out, a, b, m, n, k, **matmul_grid(m, n, batch))
        return out

    bmm = sjt.custom_op(
        "spirvjit_ops::bmm",
        bmm_impl,
        fake=lambda a, b: a.new_empty((*a.shape[:-2], a.shape[-2], b.shape[-1])),
    )

    return SimpleNamespace(
        program=prog,
        gelu=gelu,
        gelu_backward=gelu_backward,
        softmax=softmax,
        softmax_backward=softmax_backward,
        layer_norm=layer_norm,
        linear=linear,
        attention_scores=attention_scores,
        bmm=bmm,
    )


def load(path: str | Path | None = None) -> SimpleNamespace:
    """Loads the operators' .ubin (``path``, else torch_ops.ubin here, built when missing
    or older than ops.cl) and registers the operators, once per process."""
    global _ops
    with _lock:
        if _ops is None:
            ubin = Path(path) if path is not None else UBIN
            source = Path(__file__).with_name("ops.cl")
            if not ubin.exists() or ubin.stat().st_mtime < source.stat().st_mtime:
                build(ubin)
            _ops = _register(spirvjit.load(ubin))
        return _ops
