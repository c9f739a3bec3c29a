"""A fake GPU driver context for the GPU runtime paths without a GPU.

Code objects are real (ld.lld's AMD code object, ptxas's cubin, clang's bundles); the fake
does what HIP's and CUDA's loaders do with them: each loaded code object gets its own
device copy of every variable its ELF symbol table exports, initialised from the file and
found by name (hipModuleGetGlobal / cuModuleGetGlobal). Launches are recorded with their
parameters and "run" only what a test needs: ``evaluate_poly`` (hip_corpus/globals.hip)
adds its block count to ``blocks_done``, as the real kernel's atomicAdd per block does.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from spirvjit.backends.gpu.driver import GpuDriverError


def exported_objects(image: bytes) -> dict[str, bytes]:
    """The data objects an ELF code object exports, with their initial bytes: the dynamic
    symbol table of an AMD code object (what the HSA loader reads), else the symbol table
    (a cubin)."""
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQII", image, shoff + i * shentsize) for i in range(shnum)]
    kinds = [s[1] for s in sections]
    table = sections[kinds.index(11 if 11 in kinds else 2)]  # SHT_DYNSYM, else SHT_SYMTAB
    strings = sections[table[6]]
    found = {}
    for offset in range(table[4], table[4] + table[5], 24):
        name, info, _other, index, value, size = struct.unpack_from("<IBBHQQ", image, offset)
        if info != 0x11 or not 0 < index < len(sections):  # STB_GLOBAL, STT_OBJECT
            continue
        start = strings[4] + name
        symbol = image[start : image.index(b"\0", start)].decode()
        section = sections[index]
        if section[1] == 8:  # SHT_NOBITS: zeroes
            found[symbol] = bytes(size)
        else:
            at = section[4] + value - section[3]
            found[symbol] = image[at : at + size]
    return found


class Module:
    def __init__(self, context: FakeContext, image: bytes, what: str):
        self.context, self.image, self.what = context, image, what
        self.variables = {}
        for symbol, initial in exported_objects(image).items():
            address = context.alloc(len(initial))
            context.memory[address][:] = np.frombuffer(initial, np.uint8)
            self.variables[symbol] = (address, len(initial))

    def function(self, name):
        return (self, name)

    def global_variable(self, symbol):
        if symbol not in self.variables:
            raise GpuDriverError(f"looking up {symbol}", call="hipModuleGetGlobal", code=500)
        return self.variables[symbol]


class FakeContext:
    """Device memory as NumPy byte arrays; every call is logged."""

    def __init__(self):
        self.memory: dict[int, np.ndarray] = {}
        self.modules: list[Module] = []
        self.log: list[tuple] = []
        self.launches: list[tuple] = []  # (kernel, module, global, local, params)

    def load_module(self, image, what):
        self.modules.append(Module(self, image, what))
        return self.modules[-1]

    def alloc(self, nbytes):
        address = 0x1000 * (len(self.memory) + 1)
        self.memory[address] = np.zeros(max(nbytes, 1), dtype=np.uint8)
        return address

    def free(self, address):
        pass

    def _bytes(self, address, nbytes):
        base = max(a for a in self.memory if a <= address)
        return self.memory[base][address - base : address - base + nbytes]

    def copy_to_device(self, dst, src, nbytes, stream=None):
        self.log.append(("to_device", dst, stream))
        self._bytes(dst, nbytes)[:] = np.frombuffer(ctypes.string_at(src, nbytes), np.uint8)

    def copy_to_host(self, dst, src, nbytes, stream=None):
        self.log.append(("to_host", src, stream))
        ctypes.memmove(dst, self._bytes(src, nbytes).tobytes(), nbytes)

    def copy_device_to_device(self, dst, src, nbytes, stream=None):
        self.log.append(("device_to_device", dst, src, stream))
        self._bytes(dst, nbytes)[:] = self._bytes(src, nbytes)

    def launch(self, function, global_size, local_size, shared, params, stream=None):
        module, name = function
        self.log.append(("launch", name, module, stream))
        self.launches.append((name, module, tuple(global_size), tuple(local_size), params))
        if "evaluate_poly" in name:
            address, _ = module.variables["blocks_done"]
            counter = self._bytes(address, 4).view(np.uint32)
            counter += global_size[0] // local_size[0]

    def synchronize(self):
        pass

    def create_stream(self):
        return 0x7F00_0000_0000

    def synchronize_stream(self, stream):
        self.log.append(("synchronize_stream", stream))

    def destroy_stream(self, stream):
        pass
