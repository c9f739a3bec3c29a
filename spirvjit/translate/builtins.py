"""Work-item built-ins, in both forms producers use.

clang's in-tree SPIR-V backend reads them from Input variables decorated
BuiltIn; older producers call imported functions with mangled names
(``_Z13get_global_idj``, ``_Z33__spirv_BuiltInGlobalInvocationIdi``). Both end in
the backend's ``workitem`` hook, so a backend implements each query once.
"""

from __future__ import annotations

import re

from llvmlite import ir

from .abi import TargetABI

I64 = ir.IntType(64)

# A query per dimension: (query, default for dimensions past 2).
VECTOR_BUILTINS: dict[str, tuple[str, int]] = {
    "GlobalInvocationId": ("global_id", 0),
    "LocalInvocationId": ("local_id", 0),
    "WorkgroupId": ("group_id", 0),
    "GlobalSize": ("global_size", 1),
    "WorkgroupSize": ("local_size", 1),
    "EnqueuedWorkgroupSize": ("enqueued_local_size", 1),
    "NumWorkgroups": ("num_groups", 1),
    "GlobalOffset": ("global_offset", 0),
}
SCALAR_BUILTINS = (
    "WorkDim",
    "GlobalLinearId",
    "LocalInvocationIndex",
    "SubgroupSize",
    "SubgroupMaxSize",
    "NumSubgroups",
    "NumEnqueuedSubgroups",
    "SubgroupId",
    "SubgroupLocalInvocationId",
)

# OpenCL C names of the built-in functions older producers call.
OPENCL_FUNCTIONS = {
    "get_global_id": "GlobalInvocationId",
    "get_local_id": "LocalInvocationId",
    "get_group_id": "WorkgroupId",
    "get_global_size": "GlobalSize",
    "get_local_size": "WorkgroupSize",
    "get_enqueued_local_size": "EnqueuedWorkgroupSize",
    "get_num_groups": "NumWorkgroups",
    "get_global_offset": "GlobalOffset",
    "get_work_dim": "WorkDim",
    "get_global_linear_id": "GlobalLinearId",
    "get_local_linear_id": "LocalInvocationIndex",
    "get_sub_group_size": "SubgroupSize",
    "get_max_sub_group_size": "SubgroupMaxSize",
    "get_num_sub_groups": "NumSubgroups",
    "get_enqueued_num_sub_groups": "NumEnqueuedSubgroups",
    "get_sub_group_id": "SubgroupId",
    "get_sub_group_local_id": "SubgroupLocalInvocationId",
}

_MANGLED = re.compile(r"_Z(\d+)(\w+)")


def builtin_of_function(name: str) -> str | None:
    """The BuiltIn name an imported function stands for, or None."""
    plain = name
    match = _MANGLED.match(name)
    if match:
        length = int(match.group(1))
        plain = match.group(2)[:length]
    if plain.startswith("__spirv_BuiltIn"):
        candidate = plain[len("__spirv_BuiltIn") :]
        if candidate in VECTOR_BUILTINS or candidate in SCALAR_BUILTINS:
            return candidate
        return None
    return OPENCL_FUNCTIONS.get(plain)


class WorkItem:
    """Computes built-in values inside one function through the backend's hook."""

    def __init__(self, abi: TargetABI, builder: ir.IRBuilder, hidden: list[ir.Value]):
        self.abi = abi
        self.b = builder
        self.hidden = hidden

    def query(self, name: str, dim: int) -> ir.Value:
        return self.abi.workitem(self.b, self.hidden, name, dim)

    def component(self, builtin: str, dim: ir.Value | int | None) -> ir.Value:
        """One i64 component of ``builtin``; ``dim`` may be a runtime value."""
        if builtin in SCALAR_BUILTINS:
            return self.scalar(builtin)
        query, default = VECTOR_BUILTINS[builtin]
        if isinstance(dim, int):
            return self.query(query, dim) if 0 <= dim < 3 else ir.Constant(I64, default)
        dim64 = (
            self.b.zext(dim, I64)
            if dim.type.width < 64
            else self.b.trunc(dim, I64)
            if dim.type.width > 64
            else dim
        )
        parts = [self.query(query, d) for d in range(3)]
        result = ir.Constant(I64, default)
        for d in (2, 1, 0):
            is_d = self.b.icmp_unsigned("==", dim64, ir.Constant(I64, d))
            result = self.b.select(is_d, parts[d], result)
        return result

    def scalar(self, builtin: str) -> ir.Value:
        b = self.b
        if builtin == "WorkDim":
            return self.query("work_dim", 0)
        if builtin == "GlobalLinearId":
            ids = [
                b.sub(self.query("global_id", d), self.query("global_offset", d)) for d in range(3)
            ]
            sizes = [self.query("global_size", d) for d in range(3)]
            return b.add(b.mul(b.add(b.mul(ids[2], sizes[1]), ids[1]), sizes[0]), ids[0])
        if builtin in ("LocalInvocationIndex", "SubgroupId"):
            ids = [self.query("local_id", d) for d in range(3)]
            sizes = [self.query("local_size", d) for d in range(3)]
            return b.add(b.mul(b.add(b.mul(ids[2], sizes[1]), ids[1]), sizes[0]), ids[0])
        if builtin in ("NumSubgroups", "NumEnqueuedSubgroups"):
            which = "local_size" if builtin == "NumSubgroups" else "enqueued_local_size"
            sizes = [self.query(which, d) for d in range(3)]
            return b.mul(b.mul(sizes[0], sizes[1]), sizes[2])
        if builtin in ("SubgroupSize", "SubgroupMaxSize"):
            # On the CPU each work-item is its own sub-group.
            return ir.Constant(I64, 1)
        return ir.Constant(I64, 0)  # SubgroupLocalInvocationId

    def value(self, builtin: str, ty: ir.Type) -> ir.Value:
        """The whole built-in converted to ``ty`` (a scalar or a 3-lane vector of ints)."""
        if isinstance(ty, ir.VectorType):
            vec = ir.Constant(ty, ir.Undefined)
            for d in range(ty.count):
                vec = self.b.insert_element(
                    vec,
                    self.fit(self.component(builtin, d), ty.element),
                    ir.Constant(ir.IntType(32), d),
                )
            return vec
        return self.fit(self.component(builtin, 0), ty)

    def fit(self, value: ir.Value, ty: ir.Type) -> ir.Value:
        if ty.width < 64:
            return self.b.trunc(value, ty)
        return value
