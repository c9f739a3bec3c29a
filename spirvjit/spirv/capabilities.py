"""What SPIR-V features spirvjit honours: capability and extension tables, and the check
``load_spirv`` runs (through the translator's module check) so that a module declaring a
capability no spirvjit device can honour fails at load, naming it, not at a kernel's
first launch.

Three kinds of capability:

* **supported**: the translator implements what they enable, on every target (what
  ``supported_capabilities`` reports; ``Device.supports(name)`` answers from here);
* **refused**: graphics, images, pipes, device-side enqueue and the like; a module that
  declares one is rejected with a SpirvError naming it (``check_module``);
* anything else is accepted at load: capabilities that only enable instructions are
  checked where the instruction is translated (the kernel that reaches it fails at its
  first compile with an error naming the instruction). This keeps producer-specific
  capabilities whose meaning is a hint (``KernelAttributesINTEL`` from HIP) working.

Sub-groups: on the host CPU each work-item is its own sub-group (``SUB_GROUP_SIZES``).
The CPU runs a group's work-items one after another in a loop, so a wider sub-group
would need every sub-group operation to exchange values between loop iterations (a
barrier-like split of the kernel at each one); a size of 1 is allowed by OpenCL C 3.0
(the sub-group size is implementation-defined, at least 1), keeps sub-group operations
free, and is what ``get_sub_group_size()`` has always returned here. Quad operations need
four invocations and are refused.
"""

from __future__ import annotations

from ..errors import SpirvError
from .grammar import Capability
from .module import Module

# Capabilities the translator implements on every target.
SUPPORTED_CAPABILITIES: frozenset[str] = frozenset(
    {
        "Addresses", "Linkage", "Kernel", "Vector16", "Float16Buffer", "Float16", "Float64",
        "Int64", "Int64Atomics", "Int8", "Int16", "GenericPointer", "Groups",
        "ExpectAssumeKHR", "AtomicFloat32AddEXT", "AtomicFloat64AddEXT",
        "AtomicFloat32MinMaxEXT", "AtomicFloat64MinMaxEXT", "AtomicFloat16MinMaxEXT",
        "GroupNonUniform", "GroupNonUniformVote", "GroupNonUniformArithmetic",
        "GroupNonUniformBallot", "GroupNonUniformShuffle", "GroupNonUniformShuffleRelative",
        "GroupNonUniformClustered", "GroupNonUniformRotateKHR",
        "DenormPreserve", "SignedZeroInfNanPreserve", "RoundingModeRTE",
    }
)  # fmt: skip

# Capabilities no spirvjit device can honour: a module declaring one is refused at load.
REFUSED_CAPABILITIES: dict[str, str] = {
    **dict.fromkeys(
        [
            "Shader", "Matrix", "Geometry", "Tessellation", "AtomicStorage",
            "TessellationPointSize", "GeometryPointSize", "GeometryStreams", "MultiViewport",
            "InputAttachment", "SampleRateShading", "ShaderLayer", "ShaderViewportIndex",
            "StorageBuffer16BitAccess", "UniformAndStorageBuffer16BitAccess",
            "StoragePushConstant16", "StorageInputOutput16", "StorageBuffer8BitAccess",
            "UniformAndStorageBuffer8BitAccess", "StoragePushConstant8", "MultiView",
            "VariablePointersStorageBuffer", "VariablePointers", "ShaderNonUniform",
            "PhysicalStorageBufferAddresses", "ShaderClockKHR", "RayTracingKHR",
            "RayQueryKHR", "MeshShadingEXT", "FragmentDensityEXT", "DrawParameters",
        ],
        "shaders (graphics pipelines) do not run on spirvjit's compute devices",
    ),
    **dict.fromkeys(
        [
            "ImageBasic", "ImageReadWrite", "ImageMipmap", "LiteralSampler", "Sampled1D",
            "Image1D", "SampledCubeArray", "ImageCubeArray", "SampledBuffer", "ImageBuffer",
            "SampledRect", "ImageRect", "ImageMSArray", "ImageQuery", "ImageGatherExtended",
            "StorageImageMultisample", "StorageImageExtendedFormats",
            "StorageImageReadWithoutFormat", "StorageImageWriteWithoutFormat",
            "Float16ImageAMD", "ImageGatherBiasLodAMD", "ImageReadWriteLodAMD",
            "Int64ImageEXT", "BindlessImagesINTEL",
        ],
        "images and samplers are not supported",
    ),
    "Pipes": "pipes are not supported",
    "PipeStorage": "pipes are not supported",
    "DeviceEnqueue": "device-side enqueue is not supported",
    "SubgroupDispatch": "device-side enqueue is not supported",
    "NamedBarrier": "named barriers are not supported",
    "GroupNonUniformQuad": "quad operations need sub-groups of 4; sub-groups have 1 work-item",
    "QuadControlKHR": "quad operations need sub-groups of 4; sub-groups have 1 work-item",
    "DenormFlushToZero": "denormals are preserved; flushing them is not supported",
    "RoundingModeRTZ": "floating-point operations round to nearest; RTZ is not supported",
}  # fmt: skip

# SPIR-V extensions the translator implements (or whose meaning is only a hint).
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(
    {
        "SPV_KHR_expect_assume", "SPV_KHR_linkonce_odr", "SPV_KHR_no_integer_wrap_decoration",
        "SPV_KHR_non_semantic_info", "SPV_KHR_float_controls", "SPV_KHR_subgroup_rotate",
        "SPV_EXT_shader_atomic_float_add", "SPV_EXT_shader_atomic_float_min_max",
        "SPV_INTEL_kernel_attributes",
    }
)  # fmt: skip

# Extensions refused at load (what they add cannot run on any spirvjit device).
REFUSED_EXTENSIONS: dict[str, str] = {
    "SPV_KHR_ray_tracing": "shaders do not run on spirvjit's compute devices",
    "SPV_KHR_ray_query": "shaders do not run on spirvjit's compute devices",
    "SPV_EXT_mesh_shader": "shaders do not run on spirvjit's compute devices",
    "SPV_INTEL_bindless_images": "images and samplers are not supported",
    "SPV_KHR_quad_control": "quad operations need sub-groups of 4; sub-groups have 1 work-item",
}

# OpenCL extension names the host CPU device reports (``Device.extensions``).
CPU_OPENCL_EXTENSIONS: tuple[str, ...] = (
    "cl_khr_fp64", "cl_khr_fp16", "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics",
    "cl_khr_global_int32_base_atomics", "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics",
    "cl_khr_byte_addressable_store", "cl_khr_il_program",
    "cl_khr_subgroups", "cl_khr_subgroup_ballot", "cl_khr_subgroup_non_uniform_vote",
    "cl_khr_subgroup_non_uniform_arithmetic", "cl_khr_subgroup_shuffle",
    "cl_khr_subgroup_shuffle_relative", "cl_khr_subgroup_clustered_reduce",
    "cl_khr_expect_assume", "cl_khr_spirv_linkonce_odr",
    "cl_khr_spirv_no_integer_wrap_decoration", "cl_ext_float_atomics",
)  # fmt: skip

# Sub-group sizes of the host CPU device: each work-item is its own sub-group.
SUB_GROUP_SIZES: tuple[int, ...] = (1,)


def capability_name(value: int) -> str:
    """The grammar's name of a capability value (``Capability#N`` when unknown)."""
    try:
        return Capability(value).name
    except ValueError:
        return f"Capability#{value}"


def check_module(module: Module) -> None:
    """Raises SpirvError naming the first capability or extension ``module`` declares that
    no spirvjit device can honour."""
    for value in module.capabilities:
        name = capability_name(value)
        why = REFUSED_CAPABILITIES.get(name)
        if why is not None:
            raise SpirvError(f"the module declares capability {name}; spirvjit refuses it: {why}")
    for name in module.extensions:
        why = REFUSED_EXTENSIONS.get(name)
        if why is not None:
            raise SpirvError(f"the module declares extension {name}; spirvjit refuses it: {why}")


def supports(name: str) -> bool:
    """Whether spirvjit's host CPU device honours ``name``: a SPIR-V capability
    (``"Float64"``), a SPIR-V extension (``"SPV_KHR_expect_assume"``) or an OpenCL
    extension (``"cl_khr_subgroups"``)."""
    return (
        name in SUPPORTED_CAPABILITIES
        or name in SUPPORTED_EXTENSIONS
        or name in CPU_OPENCL_EXTENSIONS
    )


def supported_capabilities() -> tuple[str, ...]:
    """The SPIR-V capabilities the translator implements, sorted."""
    return tuple(sorted(SUPPORTED_CAPABILITIES))


def supported_extensions() -> tuple[str, ...]:
    """The SPIR-V extensions the translator implements, sorted."""
    return tuple(sorted(SUPPORTED_EXTENSIONS))


def cpu_opencl_extensions() -> tuple[str, ...]:
    """The OpenCL extension names the host CPU device reports."""
    return CPU_OPENCL_EXTENSIONS


def cpu_sub_group_sizes() -> tuple[int, ...]:
    """The sub-group sizes of the host CPU device (each work-item is its own sub-group)."""
    return SUB_GROUP_SIZES
