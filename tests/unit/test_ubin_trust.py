"""Whose native code runs (issue 13, item 2): file and directory checks, signatures, the
policy, and the signature footer's format. No compiler needed: native variants here are
stand-ins; tests/kernels/test_ubin_e2e.py runs real ones."""

from __future__ import annotations

import hashlib
import os

import pytest
import ubin_samples as S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spirvjit import cli
from spirvjit.errors import BinaryFormatError
from spirvjit.safe_paths import file_problem, parents_problem
from spirvjit.ubin import format as fmt
from spirvjit.ubin import signature
from spirvjit.ubin.describe import describe, render
from spirvjit.ubin.reader import UnifiedBinary, read_file
from spirvjit.ubin.trust import judge
from spirvjit.ubin.writer import write_bytes, write_file

crypto = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")
from cryptography.hazmat.primitives import serialization  # noqa: E402

ROOT = os.getuid() == 0
UNSIGNED = write_bytes(S.contents())


def new_key(tmp_path, name: str = "key") -> tuple[bytes, object]:
    """A fresh Ed25519 key: its private PEM (written to tmp_path/name) and public key."""
    key = crypto.Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / name).write_bytes(pem)
    (tmp_path / name).chmod(0o600)
    return pem, key.public_key()


def trust_keys(monkeypatch, tmp_path, *public_keys, fmt_ssh: bool = True) -> None:
    lines = []
    for public in public_keys:
        if fmt_ssh:
            line = public.public_bytes(
                serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
            )
            lines.append(line + b" test key")
        else:
            lines.append(
                public.public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                ).strip()
            )
    keys = tmp_path / "trusted_keys"
    keys.write_bytes(b"# trusted\n\n" + b"\n".join(lines) + b"\n")
    keys.chmod(0o644)
    monkeypatch.setenv("SPIRVJIT_TRUSTED_KEYS", str(keys))


# -- locations ------------------------------------------------------------------------------


def test_private_file_in_private_directories_is_trusted(tmp_path):
    path = tmp_path / "app.ubin"
    write_file(S.contents(), path)
    binary = read_file(path)
    assert binary.location_problem is None
    assert judge(binary, "trusted").allowed


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o664])
def test_file_writable_by_others_is_not_trusted(tmp_path, mode):
    path = tmp_path / "app.ubin"
    write_file(S.contents(), path)
    path.chmod(mode)
    binary = read_file(path)
    assert "is writable by group or others" in binary.location_problem
    trust = judge(binary, "trusted")
    assert not trust.allowed and "not signed" in trust.reason


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_directory_writable_by_others_anywhere_above_is_not_trusted(tmp_path, mode):
    shared = tmp_path / "shared"
    (shared / "a" / "b").mkdir(parents=True)
    shared.chmod(mode)
    path = shared / "a" / "b" / "app.ubin"
    write_file(S.contents(), path)
    why = read_file(path).location_problem
    assert f"its directory {shared} is writable by group or others" in why


def test_sticky_directory_is_fine_for_our_own_entries(tmp_path):
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    path = sticky / "app.ubin"
    write_file(S.contents(), path)
    assert read_file(path).location_problem is None
    (sticky / "mine").mkdir()
    write_file(S.contents(), sticky / "mine" / "app.ubin")
    assert read_file(sticky / "mine" / "app.ubin").location_problem is None


@pytest.mark.skipif(not ROOT, reason="chown to another user needs root")
def test_other_users_files_and_directories_are_not_trusted(tmp_path):
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    theirs = sticky / "theirs"
    theirs.mkdir()
    write_file(S.contents(), theirs / "app.ubin")
    os.chown(theirs, 65534, 65534)  # their directory in /tmp: they can swap the file
    assert "owned by uid 65534" in read_file(theirs / "app.ubin").location_problem
    os.chown(theirs, 0, 0)
    os.chown(theirs / "app.ubin", 65534, 65534)
    assert "owned by uid 65534" in read_file(theirs / "app.ubin").location_problem
    # In a sticky directory, an entry on the way that another user owns is theirs to swap.
    os.chown(theirs / "app.ubin", 0, 0)
    os.chown(theirs, 65534, 65534)
    theirs.chmod(0o755)
    assert "owned by uid 65534" in parents_problem(theirs / "app.ubin")


def test_symlinks_are_judged_by_what_they_point_to(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    write_file(S.contents(), shared / "app.ubin")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "link.ubin").symlink_to(shared / "app.ubin")
    assert (
        "writable by group or others"
        in read_file(tmp_path / "private" / "link.ubin").location_problem
    )


def test_file_problem_requires_a_regular_file(tmp_path):
    assert "not a regular file" in file_problem(os.stat(tmp_path))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(BinaryFormatError, match="not a regular file"):
        read_file(tmp_path / "fifo")  # and does not block opening it


def test_bytes_have_no_location():
    binary = UnifiedBinary(UNSIGNED)
    trust = judge(binary, "trusted")
    assert not trust.allowed and "given as bytes" in trust.reason


# -- policy ---------------------------------------------------------------------------------


def test_policy_from_the_environment_and_the_argument(tmp_path, monkeypatch):
    path = tmp_path / "app.ubin"
    write_file(S.contents(), path)
    binary = read_file(path)
    assert judge(binary).policy == "trusted"
    monkeypatch.setenv("SPIRVJIT_NATIVE", "never")
    assert not judge(binary).allowed
    assert judge(binary, "always").allowed
    monkeypatch.setenv("SPIRVJIT_NATIVE", "ALWAYS")
    assert judge(UnifiedBinary(UNSIGNED)).allowed
    monkeypatch.setenv("SPIRVJIT_NATIVE", "sometimes")
    with pytest.raises(ValueError, match="SPIRVJIT_NATIVE='sometimes': expected one of never"):
        judge(binary)
    with pytest.raises(ValueError, match="native='yes'"):
        judge(binary, "yes")


# -- signatures -----------------------------------------------------------------------------


def signed_file(tmp_path, pem: bytes, name: str = "app.ubin", mode: int = 0o644):
    path = tmp_path / name
    path.write_bytes(signature.sign_bytes(UNSIGNED, pem))
    path.chmod(mode)
    return path


def test_signature_footer_layout(tmp_path):
    pem, public = new_key(tmp_path)
    data = signature.sign_bytes(UNSIGNED, pem)
    n = len(UNSIGNED)
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert data[:n] == UNSIGNED and len(data) == n + 120
    assert data[n : n + 8] == b"\x89USIG\r\n\x1a"
    assert data[n + 8 : n + 16] == (1).to_bytes(4, "little") + (1).to_bytes(4, "little")
    assert data[n + 16 : n + 24] == n.to_bytes(8, "little")
    assert data[n + 24 : n + 56] == raw
    public.verify(data[n + 56 :], data[n : n + 56] + UNSIGNED)  # what the signature covers
    assert int.from_bytes(data[16:24], "little") == n  # the header still says N: old
    # readers refuse the file ("extra bytes at the end") instead of misreading it
    binary = UnifiedBinary(data)
    assert binary.size == n and binary.file_size == n + 120
    assert binary.footer.public_key == raw


def test_signed_by_a_trusted_key_runs_from_anywhere(tmp_path, monkeypatch):
    pem, public = new_key(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    path = signed_file(shared, pem, mode=0o666)
    binary = read_file(path)
    assert not judge(binary, "trusted").allowed  # a good signature, but whose?
    trust_keys(monkeypatch, tmp_path, public)
    trust = judge(binary, "trusted")
    assert trust.allowed and "signed by trusted key SHA256:" in trust.reason
    trust_keys(monkeypatch, tmp_path, public, fmt_ssh=False)  # PEM keys work too
    assert judge(binary, "trusted").allowed


def test_untrusted_or_unsafe_keys_files_do_not_count(tmp_path, monkeypatch):
    pem, public = new_key(tmp_path)
    _, other = new_key(tmp_path, "other")
    path = signed_file(tmp_path / "", pem, mode=0o666)
    trust_keys(monkeypatch, tmp_path, other)
    trust = judge(read_file(path), "trusted")
    assert not trust.allowed and "which is not a trusted key" in trust.reason
    trust_keys(monkeypatch, tmp_path, public)
    (tmp_path / "trusted_keys").chmod(0o666)  # anyone could add their key to it
    trust = judge(read_file(path), "trusted")
    assert not trust.allowed and "ignoring the keys file" in trust.reason


def test_modified_after_signing_is_refused_even_in_a_safe_place(tmp_path, monkeypatch):
    """The attacker recomputes every section digest; only the signature catches it."""
    pem, public = new_key(tmp_path)
    trust_keys(monkeypatch, tmp_path, public)
    data = signature.sign_bytes(UNSIGNED, pem)
    rows = S.sections(data[: len(UNSIGNED)])
    obj = next(r for r in rows if r[0] == fmt.OBJECT)
    obj[3] = obj[3][:-5] + b"evil!"
    forged = S.assemble(rows)
    assert len(forged) == len(UNSIGNED)
    path = tmp_path / "app.ubin"
    path.write_bytes(forged + data[len(UNSIGNED) :])
    path.chmod(0o600)
    binary = read_file(path)
    assert binary.location_problem is None
    trust = judge(binary, "trusted")
    assert not trust.allowed and "modified after it was signed" in trust.reason


def test_sign_and_verify_commands(tmp_path, monkeypatch, capsys):
    pem, public = new_key(tmp_path)
    path = tmp_path / "app.ubin"
    write_file(S.contents(), path)
    assert cli.main(["verify", str(path)]) == 1
    assert "not signed" in capsys.readouterr().out
    assert cli.main(["sign", str(path), "--key", str(tmp_path / "key")]) == 0
    assert "signed by SHA256:" in capsys.readouterr().out
    monkeypatch.setenv("SPIRVJIT_TRUSTED_KEYS", str(tmp_path / "nothing-here"))
    assert cli.main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "not a trusted key" in out and "nothing-here does not exist" in out
    trust_keys(monkeypatch, tmp_path, public)
    assert cli.main(["verify", str(path)]) == 0
    assert "good signature by trusted key" in capsys.readouterr().out
    # Signing again replaces the signature (it is not appended twice).
    assert cli.main(["sign", str(path), "--key", str(tmp_path / "key")]) == 0
    assert len(path.read_bytes()) == len(UNSIGNED) + 120
    # inspect says what a load would decide, and why.
    info = describe(read_file(path))
    assert info["native_trust"]["trusted"] and info["native_trust"]["signer"].startswith("SHA256:")
    assert "signature: signed by trusted key" in render(info)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert cli.main(["verify", str(path)]) == 1
    assert "BAD signature" in capsys.readouterr().out


def test_sign_refuses_other_keys(tmp_path, capsys):
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "ec").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path = tmp_path / "app.ubin"
    write_file(S.contents(), path)
    assert cli.main(["sign", str(path), "--key", str(tmp_path / "ec")]) == 1
    assert "not an Ed25519 key" in capsys.readouterr().err
    assert path.read_bytes() == UNSIGNED


def test_inspect_says_why_native_code_is_not_trusted(tmp_path):
    path = tmp_path / "app.ubin"
    write_file(S.contents(), path)
    path.chmod(0o666)
    text = render(describe(read_file(path)))
    assert "native code NOT trusted (the kernels JIT instead)" in text
    assert "is writable by group or others (mode 0666)" in text


# -- the footer under fuzzing ----------------------------------------------------------------


_PEM = crypto.Ed25519PrivateKey.from_private_bytes(bytes(range(32))).private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
SIGNED = signature.sign_bytes(UNSIGNED, _PEM)


@settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_footer_mutations_never_escape(data):
    """Bit flips and field values in the footer (and header size field): reading raises
    BinaryFormatError or gives a footer whose signature fails; nothing else."""
    blob = bytearray(SIGNED)
    n = len(UNSIGNED)
    how = data.draw(st.sampled_from(["flip", "field", "truncate", "append"]))
    if how == "flip":
        for bit in data.draw(
            st.lists(st.integers(n * 8, len(blob) * 8 - 1), min_size=1, max_size=4)
        ):
            blob[bit // 8] ^= 1 << (bit % 8)
    elif how == "field":
        at, size = data.draw(st.sampled_from([(n + 8, 4), (n + 12, 4), (n + 16, 8), (16, 8)]))
        value = data.draw(st.integers(0, 2 ** (8 * size) - 1) | st.sampled_from([0, n, n + 120]))
        blob[at : at + size] = value.to_bytes(size, "little")
    elif how == "truncate":
        blob = blob[: data.draw(st.integers(n, len(blob) - 1))]
    else:
        blob += data.draw(st.binary(min_size=1, max_size=130))
    try:
        binary = UnifiedBinary(bytes(blob))
    except BinaryFormatError as error:
        assert error.offset is None or 0 <= error.offset <= len(blob)
        return
    if binary.footer is not None and bytes(blob) != SIGNED:
        assert not signature.signature_valid(binary.data, binary.footer)


def test_signing_is_deterministic():
    """Ed25519 is deterministic: the same key and file give the same signed file."""
    assert (
        hashlib.sha256(SIGNED).hexdigest()
        == hashlib.sha256(signature.sign_bytes(UNSIGNED, _PEM)).hexdigest()
    )
