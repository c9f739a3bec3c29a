"""PyTorch integration: spirvjit kernels as ``torch.library`` custom operators.

``import spirvjit`` never imports torch; this module does (torch is optional)::

    import spirvjit.torch as sjt

    prog = spirvjit.load("ops.ubin")

    def gelu(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        sjt.launch(prog.gelu, out, x, x.numel(), global_size=x.numel())
        return out

    op = sjt.custom_op("mylib::gelu", gelu, fake=lambda x: torch.empty_like(x),
                       backward=gelu_backward, setup_context=save_x)
    y = op(x)  # eager, under torch.compile (no graph break) and under autograd

:func:`launch` runs a kernel where its tensors live, without copies: CPU tensors in
place (DLPack views), CUDA/ROCm tensors by device address on the spirvjit GPU device
with the tensor's index (``__cuda_array_interface__``). :func:`custom_op` registers the
function that launches as a ``torch.library.custom_op`` with the fake (meta)
implementation ``torch.compile`` traces with and, optionally, a backward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .device import Device
from .errors import LaunchError
from .program import Kernel

__all__ = ["custom_op", "device_for", "launch"]


def device_for(tensor_device: torch.device) -> Device | None:
    """The spirvjit device a torch device's memory belongs to: None for the CPU (the
    kernel's default, the host), the GPU of the same vendor and index for ``cuda:N`` (an
    AMD GPU when torch is a ROCm build). LaunchError when spirvjit sees no such GPU."""
    if tensor_device.type == "cpu":
        return None
    if tensor_device.type != "cuda":
        raise LaunchError(f"spirvjit cannot run on torch device {tensor_device}")
    from . import devices

    kind = "amd" if getattr(torch.version, "hip", None) else "nvidia"
    gpus = [d for d in devices() if d.kind == kind]
    index = tensor_device.index if tensor_device.index is not None else 0
    found = next((d for d in gpus if d.index == index), None)
    if found is None:
        raise LaunchError(
            f"torch tensor on {tensor_device}, but spirvjit finds no {kind} GPU {index} "
            f"(it sees {', '.join(d.name for d in gpus) or 'none'})"
        )
    return found


def _tensor_device(args: Sequence) -> torch.device | None:
    """The one device of the tensor arguments (LaunchError when they are on several)."""
    found = None
    for value in args:
        if isinstance(value, torch.Tensor):
            if found is None:
                found = value.device
            elif value.device != found:
                raise LaunchError(f"tensor arguments on both {found} and {value.device}")
    return found


def launch(
    kernel: Kernel,
    *args,
    global_size,
    local_size=None,
    global_offset=None,
    **kwargs,
) -> None:
    """Launches ``kernel`` on the device its tensor arguments live on, passing them
    without copies (other arguments as :meth:`Kernel.__call__` takes them).

    Tensors must be contiguous and of the kernel's element types (the launch raises
    LaunchError as for NumPy arrays). Tensors that require grad are passed as their
    ``detach()``: the kernel writes their memory, autograd is the caller's business
    (see :func:`custom_op`).
    """
    where = _tensor_device(list(args) + list(kwargs.values()))

    def plain(value):
        return value.detach() if isinstance(value, torch.Tensor) else value

    args = tuple(plain(a) for a in args)
    kwargs = {k: plain(v) for k, v in kwargs.items()}
    device = None if where is None else device_for(where)
    if device is not None:
        # spirvjit launches on its own stream: torch's queued work on these tensors must
        # be done first (and spirvjit's launch is synchronous, so its results are ready
        # for torch's next kernels).
        torch.cuda.synchronize(where)
    kernel(
        *args,
        global_size=global_size,
        local_size=local_size,
        global_offset=global_offset,
        device=device,
        **kwargs,
    )


def custom_op(
    name: str,
    fn: Callable,
    *,
    fake: Callable,
    backward: Callable | None = None,
    setup_context: Callable | None = None,
    mutates_args: Sequence[str] = (),
    device_types: str | Sequence[str] | None = None,
):
    """Registers ``fn`` (a function of tensors that launches spirvjit kernels, with type
    hints, as ``torch.library.custom_op`` requires) as the operator ``name``
    ("namespace::op"), and returns it.

    ``fake(*args)`` returns empty tensors of the outputs' shapes, dtypes and devices
    (``torch.compile`` and meta tensors use it instead of running kernels).
    ``backward(ctx, *grads)`` and ``setup_context(ctx, inputs, output)`` are as in
    ``torch.library.register_autograd``; the backward may call other custom ops (kernels).
    """
    op = torch.library.custom_op(name, mutates_args=tuple(mutates_args), device_types=device_types)(
        fn
    )
    op.register_fake(fake)
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context)
    return op
