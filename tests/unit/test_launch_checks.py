"""Launch-size checks, local-size choice and imported built-in names, without toolchains."""

from __future__ import annotations

import numpy as np
import pytest

from spirvjit import LaunchError
from spirvjit.ndrange import choose_local_size, normalize_sizes
from spirvjit.translate.builtins import builtin_of_function
from spirvjit.translate.imports import demangle, first_parameter_signed


def test_sizes_are_padded_to_three_dimensions():
    assert normalize_sizes("k", 10, None, None) == ((10, 1, 1), None, (0, 0, 0), 1)
    assert normalize_sizes("k", (4, 6), (2, 3), (1, 1)) == ((4, 6, 1), (2, 3, 1), (1, 1, 0), 2)


@pytest.mark.parametrize(
    "global_size, local_size, offset, message",
    [
        (0, None, None, "zero or negative"),
        ((4, 4, 4, 4), None, None, "tuple of 1-3 ints"),
        ((8,), (2, 2), None, "dimensions"),
        ((8,), (0,), None, "zero or negative"),
        ((8192,), (8192,), None, "more than 4096"),
        ((8,), None, (1, 1), "non-negative"),
        ("8", None, None, "tuple of 1-3 ints"),
    ],
)
def test_bad_sizes_raise_launch_error(global_size, local_size, offset, message):
    with pytest.raises(LaunchError, match=message):
        normalize_sizes("k", global_size, local_size, offset, 4096)


@pytest.mark.parametrize(
    "global_size, local_size, offset, message",
    [
        # Each of these used to wrap silently in the launch record (issue 13, item 6).
        ((2**40, 2**40), None, None, "work-items"),
        (2**64, None, None, "work-items"),
        (2**63, None, None, "work-items"),
        (16, None, 2**64, "does not fit"),
        (16, None, 2**63 - 8, "does not fit"),
        (True, None, None, "a bool is not a size"),
        ((8, False), None, None, "a bool is not a size"),
        (8, np.bool_(True), None, "a bool is not a size"),
        (8.0, None, None, "tuple of 1-3 ints"),
        (8, None, -1, "non-negative"),
    ],
)
def test_sizes_that_would_wrap_are_refused(global_size, local_size, offset, message):
    with pytest.raises(LaunchError, match=message):
        normalize_sizes("k", global_size, local_size, offset, 4096)


def test_largest_sizes_are_accepted():
    gs, _, offset, dims = normalize_sizes("k", 2**62, None, 2**62 - 1, 4096)
    assert (gs[0], offset[0], dims) == (2**62, 2**62 - 1, 1)
    assert normalize_sizes("k", np.int64(8), None, None)[0] == (8, 1, 1)


def test_local_size_prefers_divisors_and_falls_back_to_non_uniform():
    assert choose_local_size((1024, 1, 1), 1) == (256, 1, 1)
    assert choose_local_size((1000, 1, 1), 1) == (250, 1, 1)
    # 1009 is prime: a group of 1 would cost more than one non-uniform last group.
    assert choose_local_size((1009, 1, 1), 1) == (256, 1, 1)
    gx, gy, gz = choose_local_size((64, 64, 1), 2)
    assert gx * gy <= 256 and 64 % gx == 0 and 64 % gy == 0 and gz == 1


def test_builtin_function_names():
    assert builtin_of_function("_Z13get_global_idj") == "GlobalInvocationId"
    assert builtin_of_function("_Z33__spirv_BuiltInGlobalInvocationIdi") == "GlobalInvocationId"
    assert builtin_of_function("get_work_dim") == "WorkDim"
    assert builtin_of_function("_Z3sinf") is None


def test_demangled_conversion_signatures():
    assert demangle("_Z14convert_doublel") == ("convert_double", "l")
    assert first_parameter_signed("l") is True
    assert first_parameter_signed("m") is False
    assert first_parameter_signed("Dv4_h") is False
    assert first_parameter_signed("f") is None
    assert demangle("not_mangled") is None
