"""Ed25519 signatures of unified binaries: the footer's bytes, signing, verifying, and the
public keys this user trusts.

A signed file is an unsigned file followed by a fixed-size footer (docs/ubin.md)::

    +0   8   magic 89 55 53 49 47 0D 0A 1A ("\\x89USIG\\r\\n\\x1a")
    +8   4   footer version: 1
    +12  4   algorithm: 1 = Ed25519
    +16  8   signed length N: the unsigned file's size (its header's file size)
    +24  32  the signer's Ed25519 public key
    +56  64  Ed25519 signature of footer[0:56] + file[0:N]

The footer's first 56 bytes are signed with the file, so neither the key nor the length
can be swapped. The ``cryptography`` package does the Ed25519 (``pip install
spirvjit[sign]``); without it files still read, but no signature can be checked.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..errors import BinaryFormatError

log = logging.getLogger("spirvjit")

MAGIC = b"\x89USIG\r\n\x1a"
VERSION = 1
ED25519 = 1
FOOTER = struct.Struct("<8sIIQ32s64s")  # 120 bytes
SIGNED_PART = 56  # the footer bytes covered by the signature: all but the signature


class SignatureUnavailable(Exception):
    """Signing or verifying needs the ``cryptography`` package, or a key is unusable."""


@dataclass(frozen=True, slots=True)
class Footer:
    """A parsed signature footer (not yet verified)."""

    signed_length: int
    public_key: bytes
    signature: bytes
    raw: bytes  # the footer's bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)


def fingerprint(public_key: bytes) -> str:
    """How a key is named to users: ``SHA256:`` and the first 16 bytes of its digest in hex."""
    return "SHA256:" + hashlib.sha256(public_key).hexdigest()[:32]


def parse_footer(data, signed_length: int) -> Footer:
    """The footer at ``signed_length`` of ``data``, which must end right after it.

    Raises BinaryFormatError (with the footer's byte offset) for anything but a version-1
    Ed25519 footer whose length field says ``signed_length``.
    """
    if len(data) - signed_length != FOOTER.size:
        raise BinaryFormatError(
            f"{len(data) - signed_length} bytes after the sections, not a signature footer "
            f"({FOOTER.size} bytes)",
            signed_length,
        )
    raw = bytes(data[signed_length:])
    magic, version, algorithm, length, key, signature = FOOTER.unpack(raw)
    if magic != MAGIC:
        raise BinaryFormatError(
            f"{FOOTER.size} extra bytes after the last section are not a signature footer "
            "(bad magic)",
            signed_length,
        )
    if version != VERSION:
        raise BinaryFormatError(
            f"signature footer version {version} is not supported (this spirvjit reads "
            f"version {VERSION})",
            signed_length + 8,
        )
    if algorithm != ED25519:
        raise BinaryFormatError(f"unknown signature algorithm {algorithm}", signed_length + 12)
    if length != signed_length:
        raise BinaryFormatError(
            f"signature footer covers {length} bytes, the file has {signed_length} before it",
            signed_length + 16,
        )
    return Footer(signed_length, key, signature, raw)


def _crypto():
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise SignatureUnavailable(
            "the cryptography package is not installed (pip install 'spirvjit[sign]')"
        ) from None
    return serialization, ed25519


def signature_valid(data, footer: Footer) -> bool:
    """Whether ``footer``'s signature is the signature of ``data`` by its own key.

    Says nothing about whether that key is trusted. SignatureUnavailable without
    ``cryptography``.
    """
    _, ed25519 = _crypto()
    from cryptography.exceptions import InvalidSignature

    message = footer.raw[:SIGNED_PART] + bytes(data[: footer.signed_length])
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(footer.public_key).verify(
            footer.signature, message
        )
    except (InvalidSignature, ValueError):
        return False
    return True


def sign_bytes(unsigned: bytes, private_key_pem: bytes) -> bytes:
    """``unsigned`` (a unified binary without a footer) with a footer signed by the key.

    The key is an unencrypted Ed25519 private key, PEM (PKCS #8, ``openssl genpkey
    -algorithm ed25519``) or OpenSSH (``ssh-keygen -t ed25519 -N ''``). Raises
    SignatureUnavailable for another kind of key or without ``cryptography``.
    """
    serialization, ed25519 = _crypto()
    try:
        if private_key_pem.lstrip().startswith(b"-----BEGIN OPENSSH PRIVATE KEY"):
            key = serialization.load_ssh_private_key(private_key_pem, password=None)
        else:
            key = serialization.load_pem_private_key(private_key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SignatureUnavailable(f"cannot read the private key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SignatureUnavailable(f"the key is a {type(key).__name__}, not an Ed25519 key")
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    head = FOOTER.pack(MAGIC, VERSION, ED25519, len(unsigned), public, bytes(64))[:SIGNED_PART]
    return unsigned + head + key.sign(head + unsigned)


# --- trusted keys ------------------------------------------------------------------------------


def parse_public_keys(text: bytes) -> list[bytes]:
    """The Ed25519 public keys (raw, 32 bytes) in a keys file: OpenSSH lines (``ssh-ed25519
    AAAA... comment``) and PEM ``PUBLIC KEY`` blocks; blank lines and ``#`` comments are
    skipped. Raises SignatureUnavailable naming the line of anything else."""
    serialization, ed25519 = _crypto()
    keys: list[bytes] = []
    lines = text.decode("utf-8", "replace").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        number = i + 1
        i += 1
        if not line or line.startswith("#"):
            continue
        try:
            if line.startswith("-----BEGIN"):
                block = [line]
                while i < len(lines) and not block[-1].startswith("-----END"):
                    block.append(lines[i].strip())
                    i += 1
                key = serialization.load_pem_public_key("\n".join(block).encode())
            else:
                key = serialization.load_ssh_public_key(line.encode())
        except (ValueError, TypeError, serialization.UnsupportedAlgorithm) as exc:
            raise SignatureUnavailable(f"line {number}: not a public key ({exc})") from None
        if not isinstance(key, ed25519.Ed25519PublicKey):
            raise SignatureUnavailable(f"line {number}: not an Ed25519 key")
        keys.append(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    return keys


def trusted_keys(extra: list[str | os.PathLike] = ()) -> tuple[dict[bytes, str], list[str]]:
    """The public keys this user trusts to sign native code, each with the file it came
    from, and the problems found (unsafe or unreadable key files, bad lines).

    Files: ``SPIRVJIT_TRUSTED_KEYS`` (a path list) if set, else the ``trusted_keys`` file
    in the user config directory if it exists; plus ``extra``. A keys file that another
    user could write is ignored (it could make any key trusted).
    """
    from ..safe_paths import file_problem, parents_problem

    keys: dict[bytes, str] = {}
    problems: list[str] = []
    explicit = bool(os.environ.get(config.TRUSTED_KEYS_VAR, "").strip())
    files = [(p, explicit) for p in config.trusted_keys_files()] + [(Path(p), True) for p in extra]
    for path, named in files:
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                why = file_problem(st) or parents_problem(path, st)
                if why:
                    problems.append(f"ignoring the keys file {path}: it {why}")
                    continue
                found = parse_public_keys(f.read(1 << 20))
        except FileNotFoundError:
            if named:  # the default file is optional; a file the user named is not
                problems.append(f"keys file {path} does not exist")
            continue
        except OSError as exc:
            problems.append(f"cannot read the keys file {path}: {exc.strerror}")
            continue
        except SignatureUnavailable as exc:
            problems.append(f"keys file {path}: {exc}")
            continue
        for key in found:
            keys.setdefault(key, str(path))
    return keys, problems
