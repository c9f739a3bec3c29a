"""The unified binary format: round trips, determinism, located errors, variant selection."""

from __future__ import annotations

import dataclasses
import hashlib
import os

import pytest
import ubin_samples as S
import zstandard

from spirvjit.errors import BinaryFormatError
from spirvjit.target import X86_64_LEVELS, Target, enabled_features, parse_cpu_target
from spirvjit.ubin import format as fmt
from spirvjit.ubin import select
from spirvjit.ubin.reader import UnifiedBinary
from spirvjit.ubin.writer import write_bytes

COMPILER = "c" * 64
LLVM = "22.1.0 (llvmlite 0.50.0)"


def test_round_trip_keeps_everything():
    original = S.contents()
    binary = UnifiedBinary(write_bytes(original))
    binary.verify()
    back = binary.contents()
    assert back.modules == original.modules
    assert back.kernels == tuple(sorted(original.kernels, key=lambda k: k.name))
    assert back.build == original.build
    assert back.sources == original.sources
    by_cpu = {v.target.arch: v for v in back.variants}
    for variant in original.variants:
        assert by_cpu[variant.target.arch] == variant
        assert dict(by_cpu[variant.target.arch].objects) == variant.objects


def test_output_is_deterministic_and_order_independent():
    a = S.contents()
    b = dataclasses.replace(
        a,
        kernels=a.kernels[::-1],
        variants=a.variants[::-1],
        sources=(("b.cl", b"b"), ("a.cl", b"a")),
    )
    c = dataclasses.replace(a, sources=(("a.cl", b"a"), ("b.cl", b"b")))
    assert write_bytes(a) == write_bytes(a)
    assert write_bytes(b) == write_bytes(c)


def test_spirv_is_compressed_and_sections_are_hashed():
    data = write_bytes(S.contents())
    binary = UnifiedBinary(data)
    section = binary.module_section(0)
    assert section.compression == fmt.ZSTD
    assert section.stored_size < section.raw_size == len(S.SPIRV)
    for s in binary.sections:
        stored = data[s.offset : s.offset + s.stored_size]
        assert hashlib.sha256(stored).digest() == s.sha256


def test_minimal_binary_has_no_optional_sections():
    binary = UnifiedBinary(write_bytes(S.contents(variants=(), sources=())))
    assert binary.variants == () and binary.source_names == ()
    assert [s.kind_name for s in binary.sections] == ["kernels", "build", "spirv"]


@pytest.mark.parametrize(
    "mutate, offset, words",
    [
        (lambda d: b"NOTUBIN!" + d[8:], 0, "not a unified binary"),
        (lambda d: d[:8] + S.u32(3) + d[12:], 8, "format version 3"),
        (lambda d: d[:12] + S.u32(0) + d[16:], 12, "section count 0"),
        (lambda d: d[:-1], 16, "truncated"),
        (lambda d: d + b"\0", 16, "extra bytes"),
        (lambda d: d[:30], 30, "header alone"),
        (lambda d: d[:60] + bytes([d[60] ^ 1]) + d[61:], 24, "table checksum"),
    ],
)
def test_header_errors_name_the_byte(mutate, offset, words):
    with pytest.raises(BinaryFormatError) as info:
        UnifiedBinary(mutate(write_bytes(S.contents())))
    assert info.value.offset == offset
    assert words in str(info.value)
    assert str(info.value).startswith(f"byte {offset}: ")


def test_corrupted_payload_is_caught_by_its_checksum():
    data = bytearray(write_bytes(S.contents()))
    binary = UnifiedBinary(bytes(data))
    section = binary.module_section(0)
    data[section.offset + 3] ^= 0x40
    with pytest.raises(BinaryFormatError, match=r"section \d+ \(spirv\): SHA-256 mismatch") as info:
        UnifiedBinary(bytes(data)).module(0)
    assert info.value.offset == section.offset


def test_declared_sizes_are_capped_before_decompressing():
    rows = S.sections(write_bytes(S.contents()))
    zeros = bytes(1 << 24)  # 16 MiB
    bomb = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(zeros)
    spirv = next(r for r in rows if r[0] == fmt.SPIRV)
    spirv[2], spirv[3] = 1 << 24, bomb
    with pytest.raises(BinaryFormatError, match="over the limit"):
        UnifiedBinary(S.assemble(rows))
    spirv[2] = len(bomb) * 10  # under the cap, but the frame holds more
    with pytest.raises(BinaryFormatError, match="zstd frame says 16777216 bytes"):
        UnifiedBinary(S.assemble(rows)).module(0)
    # A frame whose header lies about its content size too: reading stops early.
    spirv[3] = _with_content_size(bomb, spirv[2])
    with pytest.raises(BinaryFormatError, match="bad zstd data|decompresses to more than"):
        UnifiedBinary(S.assemble(rows)).module(0)


def _with_content_size(frame: bytes, size: int) -> bytes:
    """``frame`` with its 4-byte Frame_Content_Size field (RFC 8878 3.1.1.1) set to ``size``."""
    descriptor = frame[4]
    assert descriptor >> 6 == 2 and not descriptor & 3  # 4-byte size, no dictionary id
    at = 5 + (0 if descriptor & 0x20 else 1)  # after the window descriptor, if any
    return frame[:at] + size.to_bytes(4, "little") + frame[at + 4 :]


def _spirv_frame(change) -> bytes:
    rows = S.sections(write_bytes(S.contents()))
    spirv = next(r for r in rows if r[0] == fmt.SPIRV)
    spirv[3] = change(spirv[3])
    return S.assemble(rows)


def test_zstd_frames_carry_a_checksum_that_is_verified():
    """Writers set zstd's content checksum and readers require and verify it (issue 13)."""
    binary = UnifiedBinary(write_bytes(S.contents()))
    stored = binary._data[binary.module_section(0).offset :][: binary.module_section(0).stored_size]
    assert zstandard.get_frame_parameters(bytes(stored)).has_checksum
    # The section SHA-256 is recomputed (as an attacker or a buggy tool would): only the
    # frame's own checksum can tell that the content changed.
    flipped = _spirv_frame(lambda frame: frame[:-1] + bytes([frame[-1] ^ 1]))
    with pytest.raises(BinaryFormatError, match="bad zstd data: .*checksum"):
        UnifiedBinary(flipped).module(0)
    plain = zstandard.ZstdCompressor(level=19).compress(S.SPIRV)
    with pytest.raises(BinaryFormatError, match="no content checksum"):
        UnifiedBinary(_spirv_frame(lambda frame: plain)).module(0)
    with pytest.raises(BinaryFormatError, match="not exactly one zstd frame: 4 bytes after"):
        UnifiedBinary(_spirv_frame(lambda frame: frame + b"\0\0\0\0")).module(0)
    with pytest.raises(BinaryFormatError, match="not exactly one zstd frame: truncated"):
        UnifiedBinary(_spirv_frame(lambda frame: frame[:-2])).module(0)
    with pytest.raises(BinaryFormatError, match="not a zstd frame"):
        UnifiedBinary(_spirv_frame(lambda frame: b"\0" + frame[1:])).module(0)


def test_metadata_is_validated_with_a_path():
    rows = S.sections(write_bytes(S.contents()))
    kernels = next(r for r in rows if r[0] == fmt.KERNELS)
    table = kernels[3].replace(b'"align":16', b'"align":3')
    kernels[2], kernels[3] = len(table), table
    with pytest.raises(BinaryFormatError, match=r"kernel 0 'k1', argument 1: 'align' must be"):
        UnifiedBinary(S.assemble(rows))


def test_deep_json_is_rejected_not_crashing():
    rows = S.sections(write_bytes(S.contents()))
    build = next(r for r in rows if r[0] == fmt.BUILD)
    build[3] = b"[" * 100_000 + b"]" * 100_000
    build[2] = len(build[3])
    with pytest.raises(BinaryFormatError, match="build"):
        UnifiedBinary(S.assemble(rows))


def test_unsafe_source_names_are_rejected():
    rows = S.sections(write_bytes(S.contents()))
    index = next(r for r in rows if r[0] == fmt.SOURCES)
    index[3] = index[3].replace(b'"a.cl"', b'"../x"')
    index[2] = len(index[3])
    with pytest.raises(BinaryFormatError, match="unsafe file name"):
        UnifiedBinary(S.assemble(rows))
    with pytest.raises(BinaryFormatError, match="not a bare file name"):
        write_bytes(S.contents(sources=(("../x", b""),)))


def test_orphan_and_shared_object_sections_are_rejected():
    rows = S.sections(write_bytes(S.contents()))
    rows.append([fmt.OBJECT, fmt.RAW, 3, b"abc"])
    with pytest.raises(BinaryFormatError, match="not referenced"):
        UnifiedBinary(S.assemble(rows))


def test_launch_facts_round_trip_deterministically_as_version_2():
    original = S.contents_v2()
    data = write_bytes(original)
    assert fmt.HEADER.unpack_from(data, 0)[1] == fmt.LAUNCH_FACTS_VERSION
    shuffled = dataclasses.replace(original, variants=original.variants[::-1])
    assert write_bytes(shuffled) == data
    binary = UnifiedBinary(data)
    # Sorted by identity: a target's generic code before its specialised code.
    assert [(v.target.kind, v.launch_facts) for v in binary.variants] == [
        ("cpu", ()),
        ("nvptx", ()),
        ("nvptx", S.COMMON),
    ]
    assert all(v.problem is None for v in binary.variants)
    back = binary.contents()
    assert write_bytes(back) == data
    assert {v.identity(): dict(v.objects) for v in back.variants} == {
        v.identity(): v.objects for v in original.variants
    }
    # Without launch facts, version 1: what spirvjit wrote before them.
    assert fmt.HEADER.unpack_from(write_bytes(S.contents()), 0)[1] == fmt.VERSION


@pytest.mark.parametrize(
    "facts, why",
    [
        (("zero_offset", "ids32"), "must be sorted"),
        (("ids32", "ids32"), "appears twice"),
        (("ids64",), "unknown launch fact 'ids64'"),
    ],
)
def test_writer_never_writes_facts_a_reader_would_reject(facts, why):
    with pytest.raises(BinaryFormatError, match=why):
        write_bytes(S.contents(variants=(S.gpu_variant(facts),)))
    with pytest.raises(BinaryFormatError, match="GPU code only"):
        write_bytes(S.contents(variants=(S.variant("x86-64", launch_facts=("ids32",)),)))


def test_writer_rejects_inconsistent_contents():
    with pytest.raises(BinaryFormatError, match="same target"):
        write_bytes(S.contents(variants=(S.variant("x86-64"), S.variant("x86-64"))))
    with pytest.raises(BinaryFormatError, match="at least one SPIR-V module"):
        write_bytes(S.contents(modules=(), kernels=(), variants=()))


# --- targets and selection -------------------------------------------------------------------


def _host(cpu: str, features: str) -> Target:
    return Target("cpu", S.TRIPLE, cpu, features)


AVX512_HOST = _host("sapphirerapids", ",".join("+" + f for f in sorted(X86_64_LEVELS["x86-64-v4"])))
SSE_HOST = _host("core2", "+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+ssse3,-avx2")


@pytest.fixture(autouse=True)
def _pinned_compiler(monkeypatch):
    monkeypatch.setattr(select, "compiler_digest", lambda: COMPILER)
    monkeypatch.setattr(select, "llvm_version", lambda: LLVM)
    monkeypatch.delenv(select.FORCE_JIT_VAR, raising=False)


def _variant(target: Target, **changes):
    return S.variant(
        target.arch,
        target.features,
        **{"compiler_digest": COMPILER, "llvm_version": LLVM, **changes},
    )


def _levels():
    return [_variant(parse_cpu_target(name)) for name in X86_64_LEVELS]


@pytest.fixture
def x86(monkeypatch):
    import spirvjit.target as target

    monkeypatch.setattr(target, "host_target", lambda: _host("znver4", "+avx2"))


def test_exact_variant_wins(x86):
    exact = _variant(AVX512_HOST)
    choice = select.choose([*_levels(), exact], AVX512_HOST, S.DIGEST, {})
    assert (choice.variant, choice.how) == (exact, "exact")
    assert len(choice.rejected) == 4


def test_highest_compatible_level_wins(x86):
    choice = select.choose(_levels(), AVX512_HOST, S.DIGEST, {})
    assert choice.how == "compatible" and choice.variant.target.arch == "x86-64-v4"
    choice = select.choose(_levels(), SSE_HOST, S.DIGEST, {})
    assert choice.variant.target.arch == "x86-64"
    assert dict(choice.rejected)[f"cpu:{S.TRIPLE}:x86-64-v3"].startswith("not runnable")


def test_other_named_cpus_and_triples_are_not_compatible():
    other_cpu = _variant(_host("znver4", "+avx2"))
    other_triple = dataclasses.replace(
        _variant(AVX512_HOST), target=Target("cpu", "aarch64-unknown-linux-gnu", "generic", "")
    )
    choice = select.choose([other_cpu, other_triple], AVX512_HOST, S.DIGEST, {})
    assert choice.variant is None and choice.how == "jit"
    assert len(choice.rejected) == 2


def test_generic_variant_on_aarch64():
    host = Target("cpu", "aarch64-unknown-linux-gnu", "neoverse-v2", "+neon,+sve")
    generic = dataclasses.replace(_variant(host), target=Target("cpu", host.triple, "generic", ""))
    assert select.choose([generic], host, S.DIGEST, {}).how == "compatible"


@pytest.mark.parametrize(
    "changes, spec, why",
    [
        ({"spirv_sha256": "f" * 64}, {}, "different SPIR-V"),
        ({"spec_constants": ((1, 4),)}, {1: 5}, "spec constants"),
        ({"spec_constants": ((1, 4),)}, {1: 4.0}, "spec constants"),
        ({"compiler_digest": "d" * 64}, {}, "different spirvjit compiler"),
        ({"llvm_version": "21.0"}, {}, "LLVM 21.0"),
    ],
)
def test_stale_variants_fall_back_to_the_jit(changes, spec, why):
    choice = select.choose([_variant(AVX512_HOST, **changes)], AVX512_HOST, S.DIGEST, spec)
    assert choice.variant is None
    assert why in choice.rejected[0][1]


def test_force_jit(monkeypatch):
    monkeypatch.setenv(select.FORCE_JIT_VAR, "1")
    choice = select.choose([_variant(AVX512_HOST)], AVX512_HOST, S.DIGEST, {})
    assert choice.variant is None and "SPIRVJIT_FORCE_JIT" in choice.reason


def test_parse_cpu_target_names(x86):
    import spirvjit.target as target

    monkey_host = target.host_target()
    assert parse_cpu_target("host") == monkey_host
    v3 = parse_cpu_target("x86-64-v3")
    assert (v3.arch, v3.triple) == ("x86-64-v3", monkey_host.triple)
    assert enabled_features(v3.features) == X86_64_LEVELS["x86-64-v3"]
    assert X86_64_LEVELS["x86-64-v2"] < X86_64_LEVELS["x86-64-v3"] < X86_64_LEVELS["x86-64-v4"]
    with pytest.raises(ValueError, match="valid targets: host, generic, x86-64"):
        parse_cpu_target("x86-64-v9")


def test_concurrent_writers_of_one_file_do_not_collide(tmp_path):
    # Another thread of this process mid-write holds its own temporary file; a
    # temporary name made of the process id alone made this write fail.
    from spirvjit.ubin.reader import read_file
    from spirvjit.ubin.writer import write_file

    path = tmp_path / "app.ubin"
    (tmp_path / f"app.ubin.{os.getpid()}.tmp").write_bytes(b"half a binary")
    write_file(S.contents(), path)
    assert read_file(path).module(0) == S.contents().modules[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.ubin", f"app.ubin.{os.getpid()}.tmp"]
