"""spirvjit.torch and the torch_ops example operators (examples/torch_ops: OpenCL C
shipped as one .ubin) against torch's own: results, torch.library.opcheck, autograd,
torch.compile without graph breaks, and the CUDA dispatch logic against a fake GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spirvjit  # noqa: E402
import spirvjit.torch as sjt  # noqa: E402
from spirvjit.device import Device  # noqa: E402
from spirvjit.errors import LaunchError  # noqa: E402
from spirvjit.target import parse_target  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
F = torch.nn.functional


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    sys.path.insert(0, str(EXAMPLES))
    try:
        from torch_ops import load
    finally:
        sys.path.remove(str(EXAMPLES))
    return load(tmp_path_factory.mktemp("ubin") / "torch_ops.ubin")


def _close(got, expected, atol=2e-5, rtol=2e-5):
    torch.testing.assert_close(got, expected, atol=atol, rtol=rtol)


# Shapes around the kernels' group sizes (64 per row, 16x16 tiles): 1, below, above.
ROWS = [(1, 1), (3, 63), (2, 130), (4, 5, 64)]


@pytest.mark.parametrize("shape", ROWS, ids=str)
def test_row_ops_match_torch(ops, shape):
    torch.manual_seed(0)
    x = torch.randn(shape) * 3
    cols = shape[-1]
    w, b = torch.randn(cols), torch.randn(cols)
    _close(ops.gelu(x), F.gelu(x))
    _close(ops.softmax(x), torch.softmax(x, -1))
    _close(ops.layer_norm(x, w, b, 1e-5), F.layer_norm(x, (cols,), w, b, 1e-5), atol=1e-4)


def test_softmax_of_large_values_is_stable(ops):
    x = torch.tensor([[1000.0, 1000.0, -1000.0], [-50.0, 0.0, 50.0]])
    _close(ops.softmax(x), torch.softmax(x, -1))


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 17, 33), (40, 64, 16)])
def test_linear_matches_torch(ops, m, k, n):
    torch.manual_seed(1)
    x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    _close(ops.linear(x, w, b), F.linear(x, w, b), atol=1e-4, rtol=1e-4)
    x3 = torch.randn(2, m, k)  # leading dimensions are rows too
    _close(ops.linear(x3, w, b), F.linear(x3, w, b), atol=1e-4, rtol=1e-4)


def test_attention_scores_and_bmm_match_torch(ops):
    torch.manual_seed(2)
    q, k, v = torch.randn(2, 3, 17, 8), torch.randn(2, 3, 19, 8), torch.randn(2, 3, 19, 8)
    scores = ops.attention_scores(q, k, 0.125)
    _close(scores, q @ k.transpose(-1, -2) * 0.125, atol=1e-5, rtol=1e-5)
    p = torch.softmax(scores, -1)
    _close(ops.bmm(p, v), p @ v, atol=1e-5, rtol=1e-5)


def test_non_contiguous_inputs_are_made_contiguous(ops):
    x = torch.randn(8, 6).t()  # (6, 8), transposed
    _close(ops.softmax(x), torch.softmax(x, -1))


def test_other_dtypes_are_refused(ops):
    x = torch.randn(4, 4, dtype=torch.float64)
    for call in (
        lambda: ops.softmax(x),
        lambda: ops.linear(x.float(), x.float(), torch.zeros(4, dtype=torch.float16)),
    ):
        with pytest.raises(TypeError, match="float32"):
            call()


def test_launch_writes_torch_tensors_in_place(ops):
    x = torch.linspace(-3, 3, 100)
    out = torch.zeros(100)
    address = out.data_ptr()
    sjt.launch(ops.program.gelu, out, x, 100, global_size=100)
    assert out.data_ptr() == address
    _close(out, F.gelu(x))
    with pytest.raises(LaunchError, match="not C-contiguous"):
        sjt.launch(ops.program.gelu, torch.zeros(10, 10).t(), x, 100, global_size=100)
    with pytest.raises(LaunchError, match="float64"):
        sjt.launch(ops.program.gelu, out.double(), x, 100, global_size=100)


@pytest.mark.parametrize("name", ["gelu", "softmax", "layer_norm", "linear"])
def test_opcheck(ops, name):
    torch.manual_seed(3)
    x = torch.randn(3, 20, requires_grad=name in ("gelu", "softmax"))
    args = {
        "gelu": (x,),
        "softmax": (x,),
        "layer_norm": (x, torch.randn(20), torch.randn(20), 1e-5),
        "linear": (x, torch.randn(7, 20), torch.randn(7)),
    }[name]
    torch.library.opcheck(getattr(ops, name), args)


@pytest.mark.parametrize("name,reference", [("gelu", F.gelu), ("softmax", torch.softmax)])
def test_backward_kernels_match_torch_autograd(ops, name, reference):
    torch.manual_seed(4)
    x = torch.randn(4, 70, requires_grad=True)
    grad = torch.randn(4, 70)
    (got,) = torch.autograd.grad(getattr(ops, name)(x), x, grad)
    ref = reference(x) if name == "gelu" else reference(x, -1)
    (expected,) = torch.autograd.grad(ref, x, grad)
    _close(got, expected, atol=1e-5, rtol=1e-4)


def _block(ops, x, p):
    """A pre-norm transformer block's attention and MLP, all in spirvjit operators."""
    b, t, d = x.shape
    h = ops.layer_norm(x, p["ln_w"], p["ln_b"], 1e-5)
    q, k, v = ops.linear(h, p["qkv_w"], p["qkv_b"]).split(d, -1)
    scores = ops.attention_scores(q.contiguous(), k.contiguous(), d**-0.5)
    x = x + ops.bmm(ops.softmax(scores), v.contiguous())
    return x + ops.linear(ops.gelu(ops.linear(x, p["up_w"], p["up_b"])), p["down_w"], p["down_b"])


def test_torch_compile_fullgraph_has_no_graph_breaks(ops):
    torch.manual_seed(5)
    d = 16
    p = {
        "ln_w": torch.randn(d),
        "ln_b": torch.randn(d),
        "qkv_w": torch.randn(3 * d, d) * 0.2,
        "qkv_b": torch.randn(3 * d),
        "up_w": torch.randn(4 * d, d) * 0.2,
        "up_b": torch.randn(4 * d),
        "down_w": torch.randn(d, 4 * d) * 0.2,
        "down_b": torch.randn(d),
    }
    x = torch.randn(2, 9, d)
    eager = _block(ops, x, p)
    explained = torch._dynamo.explain(lambda x: _block(ops, x, p))(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: _block(ops, x, p), fullgraph=True, backend="aot_eager")
    _close(compiled(x), eager, atol=1e-5, rtol=1e-5)


# ----- dispatch to GPUs, without one ------------------------------------------------


@pytest.fixture
def fake_gpus(monkeypatch):
    gpus = [
        Device("fake GPU 0", "nvidia", parse_target("sm_90"), 132, 1024, 228 * 1024, 0),
        Device("fake GPU 1", "nvidia", parse_target("sm_80"), 108, 1024, 164 * 1024, 1),
        Device("fake MI300", "amd", parse_target("gfx942"), 304, 1024, 64 * 1024, 0),
    ]
    monkeypatch.setattr(spirvjit, "devices", lambda: gpus)
    return gpus


def test_device_for_maps_torch_devices_to_spirvjit_gpus(fake_gpus, monkeypatch):
    monkeypatch.setattr(torch.version, "hip", None)
    assert sjt.device_for(torch.device("cpu")) is None
    assert sjt.device_for(torch.device("cuda")) is fake_gpus[0]
    assert sjt.device_for(torch.device("cuda:1")) is fake_gpus[1]
    with pytest.raises(LaunchError, match="no nvidia GPU 2"):
        sjt.device_for(torch.device("cuda:2"))
    with pytest.raises(LaunchError, match="cannot run on torch device meta"):
        sjt.device_for(torch.device("meta"))
    monkeypatch.setattr(torch.version, "hip", "6.2")  # a ROCm build: cuda:N is AMD
    assert sjt.device_for(torch.device("cuda:0")) is fake_gpus[2]


def test_launch_sends_cuda_tensors_to_their_gpu_by_address(fake_gpus, monkeypatch):
    """A CUDA tensor (stood in for: CPU torch has none) reaches the kernel on the GPU
    of its index, as its __cuda_array_interface__, after torch's stream is synchronised."""

    class CudaTensor(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda:1")

    calls = []

    class Kernel:
        def __call__(self, *args, device, **sizes):
            calls.append((args, device, sizes))

    synced = []
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda where: synced.append(where))
    t = torch.zeros(4).as_subclass(CudaTensor)
    sjt.launch(Kernel(), t, 4, global_size=4)
    ((args, device, sizes),) = calls
    assert device is fake_gpus[1] and args[1] == 4 and sizes["global_size"] == 4
    assert synced == [torch.device("cuda:1")]
    with pytest.raises(LaunchError, match="both"):
        sjt.launch(Kernel(), t, torch.zeros(4), global_size=4)


def test_import_spirvjit_does_not_import_torch():
    import subprocess

    code = "import sys, spirvjit; spirvjit.devices(); print('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_numpy_result_equals_torch_result(ops):
    """The same kernel through spirvjit's NumPy path and through the torch op."""
    x = np.linspace(-4, 4, 33, dtype=np.float32)
    out = np.empty_like(x)
    ops.program.gelu(out, x, x.size, global_size=x.size)
    np.testing.assert_array_equal(out, ops.gelu(torch.from_numpy(x)).numpy())
