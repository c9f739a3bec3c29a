"""printf: formats are parsed and checked at JIT time and printed through snprintf with
specifications spirvjit builds, never handed to the C library as written.

Before: ``%n`` wrote through its argument and ``%s`` with an int read from a wild
address (both segfaulted the process). Expected output comes from
the C library's own snprintf, called through ctypes.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from harness import build

from spirvjit.errors import CompileError


def c_format(fmt: bytes, *args) -> str:
    """The reference: ``fmt`` and ``args`` formatted by the C library's snprintf."""
    buffer = ctypes.create_string_buffer(512)
    ctypes.CDLL(None).snprintf(buffer, 512, fmt, *args)
    return buffer.value.decode()


def run(source: str, capfd, *args, global_size: int = 1) -> list[str]:
    capfd.readouterr()
    build(source).kernel("k")(*args, global_size=global_size, local_size=1)
    return capfd.readouterr().out.splitlines()


def refused(source: str) -> str:
    program = build(source)
    with pytest.raises(CompileError) as caught:
        program.kernel("k").compile()
    message = str(caught.value)
    assert message.startswith("printf in k"), message
    return message


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('int n; printf("abc%n\\n", &n);', "%n is not allowed"),
        ('printf("%n\\n", 42);', "%n is not allowed"),
        ('printf("%s\\n", 42);', "needs a pointer"),
        ('printf("%p\\n", 1.5f);', "needs a pointer"),
        ('printf("%d\\n", 1.5f);', "needs an integer"),
        ('printf("%f\\n", 7);', "needs a floating-point"),
        ('printf("%d %d\\n", 1);', "no argument for conversion 2"),
        ('printf("%v4hlf\\n", (float2)(1.0f, 2.0f));', "needs a 4-element vector"),
        ('printf("%v2hld\\n", (long2)(1, 2));', "needs 32-bit lanes"),
        ('printf("%v2hlf\\n", 1.0f);', "not a scalar"),
        ('printf("%d\\n", (int2)(1, 2));', "use a vector specifier"),
        ('printf("%q\\n", 1);', "unknown conversion"),
        ('printf("%lld\\n", 1L);', "length modifier not in OpenCL C"),
        ('printf("%*d\\n", 5, 1);', "'*' width"),
        ('printf("%99999d\\n", 1);', "field width above"),
        ('printf("%.99999f\\n", 1.0f);', "precision above"),
        ('printf("%hld\\n", 1);', "needs a vector specifier"),
        ('printf("%v4s\\n", "x");', "vector specifier cannot"),
        ('printf("%v5hld\\n", 1);', "n must be 2, 3, 4, 8 or 16"),
        ('printf("100%");', "ends inside the conversion"),
        # Latin-1 superscript digits (str.isdigit() is true for them, int() refuses them):
        # a ValueError escaped the compile instead of the CompileError.
        ('printf("%\\262d\\n", 1);', "unknown conversion"),
        ('printf("%.\\271f\\n", 1.0f);', "unknown conversion"),
        ('printf("%v\\263d\\n", 1);', "n must be 2, 3, 4, 8 or 16"),
    ],
)
def test_hostile_and_mismatched_formats_are_refused(body: str, why: str) -> None:
    message = refused(f"kernel void k(global int* out) {{ {body} }}")
    assert why in message, message


def test_scalar_conversions_match_c(capfd) -> None:
    lines = run(
        r"""
        kernel void k(global int* out) {
            printf("[%+05d|%-6x|%#o|%X|%u]\n", 42, 255, 8, 48879, 7u);
            printf("[%.3e|%10.4f|%g|%G|%-8.2f|%e]\n", 1234.5f, 3.14159f, 0.0001f, 1e20f, 2.5f, 0.0);
            printf("[%c%c|%%|%s|%5s|%.2s]\n", 'o', 'k', "str", "ab", "xyz");
        }
        """,
        capfd,
        np.zeros(1, np.int32),
    )
    assert lines == [
        c_format(b"[%+05d|%-6x|%#o|%X|%u]", 42, 255, 8, 48879, 7),
        c_format(
            b"[%.3e|%10.4f|%g|%G|%-8.2f|%e]",
            *map(ctypes.c_double, (1234.5, np.float32(3.14159), np.float32(0.0001))),
            *map(ctypes.c_double, (np.float32(1e20), 2.5, 0.0)),
        ),
        c_format(b"[%c%c|%%|%s|%5s|%.2s]", ord("o"), ord("k"), b"str", b"ab", b"xyz"),
    ]


def test_length_modifiers_take_their_width(capfd) -> None:
    lines = run(
        r"""
        kernel void k(global long* x) {
            printf("%hhd %hhu %hd %hu %ld %lu %lx %d\n",
                   300, 300, 70000, -1, x[0], x[1], x[0], (int)get_global_id(0));
            printf("%d %ld\n", get_global_id(0) + 5, -x[0]);
        }
        """,
        capfd,
        np.array([-(2**40) - 3, -1], np.int64),
    )
    assert lines == [
        f"44 44 4464 65535 {-(2**40) - 3} {2**64 - 1} {(-(2**40) - 3) % 2**64:x} 0",
        f"5 {2**40 + 3}",
    ]


def test_vectors_lane_by_lane(capfd) -> None:
    lines = run(
        r"""
        kernel void k(global int* out) {
            printf("%v4hlf|%v2hhd|%v3hu|%v8hlx|%v2lf|%#v2hlx\n",
                   (float4)(1.5f, 2.0f, -3.0f, 4.25f), (char2)(-1, 127),
                   (ushort3)(1, 2, 65535), (uint8)(1, 2, 3, 4, 10, 11, 12, 255),
                   (double2)(0.5, 1e-3), (int2)(16, 255));
        }
        """,
        capfd,
        np.zeros(1, np.int32),
    )
    assert lines == [
        "1.500000,2.000000,-3.000000,4.250000|-1,127|1,2,65535|1,2,3,4,a,b,c,ff"
        "|0.500000,0.001000|0x10,0xff"
    ]


def test_output_past_the_buffer_is_cut_not_overrun(capfd) -> None:
    lines = run(
        r"""
        kernel void k(global int* out) {
            printf("%4000d%4000d%s\n", 1, 2, "tail");
            printf("after\n");
        }
        """,
        capfd,
        np.zeros(1, np.int32),
    )
    # The first call's 8004 characters stop at the 4 KiB buffer's 4095th (no newline).
    assert lines == [" " * 3999 + "1" + " " * 95 + "after"]


def test_several_work_items_print_whole_lines(capfd) -> None:
    lines = run(
        r"""
        kernel void k(global const float* x) {
            int i = (int)get_global_id(0);
            printf("item %d of %d: %.2f %s\n", i, (int)get_global_size(0), x[i], "done");
        }
        """,
        capfd,
        np.arange(64, dtype=np.float32) / 4,
        global_size=64,
    )
    assert sorted(lines) == sorted(f"item {i} of 64: {i / 4:.2f} done" for i in range(64))
