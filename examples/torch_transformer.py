"""The forward pass of a small transformer block in PyTorch with spirvjit operators
(examples/torch_ops: OpenCL C, one .ubin) in place of torch's own: layer norm, the
linear layers, attention scores, softmax, the attention-weighted sum and GELU.

Checks the result against torch eager, times both, and runs the spirvjit version under
``torch.compile(fullgraph=True)`` (a graph break would raise)::

    PYTHONPATH=. python3 examples/torch_transformer.py [--batch 4 --seq 64 --dim 128 --heads 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_ops import load  # noqa: E402

F = torch.nn.functional
TOLERANCE = 1e-4  # max |spirvjit - torch| allowed, relative to max |torch output|


class Block(nn.Module):
    """A pre-norm transformer encoder block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        for ln in (self.ln1, self.ln2):  # not the identity, so the test means something
            nn.init.normal_(ln.weight, 1.0, 0.1)
            nn.init.normal_(ln.bias, 0.0, 0.1)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).transpose(1, 2).contiguous()

    def forward(self, x: torch.Tensor, ops=None) -> torch.Tensor:
        """torch's operators when ``ops`` is None, else those of ``ops``."""
        b, s, d = x.shape
        scale = (d // self.heads) ** -0.5
        if ops is None:
            layer_norm = lambda t, ln: F.layer_norm(t, (d,), ln.weight, ln.bias, ln.eps)  # noqa: E731
            linear = lambda t, lin: F.linear(t, lin.weight, lin.bias)  # noqa: E731
            scores = lambda q, k: q @ k.transpose(-1, -2) * scale  # noqa: E731
            softmax, bmm, gelu = (lambda t: torch.softmax(t, -1)), torch.matmul, F.gelu
        else:
            layer_norm = lambda t, ln: ops.layer_norm(t, ln.weight, ln.bias, ln.eps)  # noqa: E731
            linear = lambda t, lin: ops.linear(t, lin.weight, lin.bias)  # noqa: E731
            scores = lambda q, k: ops.attention_scores(q, k, scale)  # noqa: E731
            softmax, bmm, gelu = ops.softmax, ops.bmm, ops.gelu
        q, k, v = linear(layer_norm(x, self.ln1), self.qkv).split(d, -1)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        attended = bmm(softmax(scores(q, k)), v).transpose(1, 2).reshape(b, s, d)
        x = x + linear(attended, self.proj)
        return x + linear(gelu(linear(layer_norm(x, self.ln2), self.up)), self.down)


def median_seconds(fn, repeat: int) -> float:
    fn()  # warm up (first launches load the kernels)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--backend", default="inductor", help="torch.compile backend")
    args = parser.parse_args()

    torch.manual_seed(0)
    ops = load()
    block = Block(args.dim, args.heads).eval()
    x = torch.randn(args.batch, args.seq, args.dim)
    with torch.no_grad():
        expected = block(x)
        got = block(x, ops)
        error = (got - expected).abs().max().item()
        scale = expected.abs().max().item()
        print(f"block: batch {args.batch}, seq {args.seq}, dim {args.dim}, heads {args.heads}")
        print(f"max |spirvjit - torch eager| = {error:.3g} (max |output| {scale:.3g})")
        if error > TOLERANCE * scale:
            raise SystemExit(f"error above the tolerance {TOLERANCE:g} x max |output|")

        explained = torch._dynamo.explain(lambda t: block(t, ops))(x)
        print(
            f"torch.compile: {explained.graph_count} graph, "
            f"{explained.graph_break_count} graph breaks"
        )
        compiled = torch.compile(lambda t: block(t, ops), fullgraph=True, backend=args.backend)
        compiled_error = (compiled(x) - expected).abs().max().item()
        print(f"max |compiled spirvjit - torch eager| = {compiled_error:.3g}")

        threads = torch.get_num_threads()
        eager_s = median_seconds(lambda: block(x), args.repeat)
        ours_s = median_seconds(lambda: block(x, ops), args.repeat)
        compiled_s = median_seconds(lambda: compiled(x), args.repeat)
        print(f"median of {args.repeat} forward passes ({threads} torch threads):")
        print(f"  torch eager            {eager_s * 1e3:8.2f} ms")
        print(f"  spirvjit operators     {ours_s * 1e3:8.2f} ms ({ours_s / eager_s:.1f}x)")
        print(f"  spirvjit, compiled     {compiled_s * 1e3:8.2f} ms ({compiled_s / eager_s:.1f}x)")


if __name__ == "__main__":
    main()
