"""``spirvjit sign`` and ``spirvjit verify``: Ed25519 signatures of unified binaries.

The footer format is in ``signature`` (and docs/ubin.md), the trust decision in
``trust`` (and docs/threat-model.md).
"""

from __future__ import annotations

import argparse
import os

from ..errors import EXIT_BAD_INPUT, EXIT_OK


def register_sign(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit sign FILE.ubin --key KEY [-o OUT]``."""
    parser = subparsers.add_parser(
        "sign",
        help="sign a unified binary (Ed25519) so its native code is trusted anywhere",
        description="Append an Ed25519 signature of the whole file, made with KEY (an "
        "unencrypted Ed25519 private key: `openssl genpkey -algorithm ed25519 -out KEY` or "
        "`ssh-keygen -t ed25519 -N '' -f KEY`), replacing any earlier signature. Machines "
        "that list the public key in SPIRVJIT_TRUSTED_KEYS or ~/.config/spirvjit/"
        "trusted_keys run its native code wherever the file lies. Needs the cryptography "
        "package (pip install 'spirvjit[sign]').",
    )
    parser.set_defaults(handler=_run_sign, error=parser.error)
    parser.add_argument("file", metavar="FILE.ubin")
    parser.add_argument("--key", required=True, metavar="KEY", help="the private key file")
    parser.add_argument("-o", "--output", metavar="OUT", help="write here instead of FILE")


def _run_sign(args: argparse.Namespace) -> int:
    from ..errors import BinaryFormatError
    from ..files import write_atomic
    from .reader import read_file
    from .signature import SignatureUnavailable, fingerprint, sign_bytes

    binary = read_file(args.file)
    binary.verify()  # sign only what reads back: every section's checksum
    with open(args.key, "rb") as f:
        key = f.read(1 << 16)
    try:
        signed = sign_bytes(bytes(binary.data[: binary.size]), key)
    except SignatureUnavailable as exc:
        raise BinaryFormatError(f"cannot sign with {args.key}: {exc}") from None
    out = args.output or args.file
    mode = 0o666 if args.output else os.stat(args.file).st_mode & 0o777
    write_atomic(out, signed, mode=mode)
    print(f"{out}: signed by {fingerprint(signed[binary.size + 24 : binary.size + 56])}")
    return EXIT_OK


def register_verify(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit verify FILE.ubin [--key PUB ...]``."""
    parser = subparsers.add_parser(
        "verify",
        help="check a unified binary's signature and whether its native code is trusted",
        description="Check every section's checksum and the file's signature against the "
        "trusted public keys (SPIRVJIT_TRUSTED_KEYS, else ~/.config/spirvjit/trusted_keys, "
        "plus --key). Exit 0 when the file is signed by a trusted key, 1 otherwise; also "
        "says whether this machine would run its native code, and why.",
    )
    parser.set_defaults(handler=_run_verify, error=parser.error)
    parser.add_argument("file", metavar="FILE.ubin")
    parser.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="PUB",
        help="also trust the public keys in this file (OpenSSH or PEM), repeatable",
    )


def _run_verify(args: argparse.Namespace) -> int:
    from .names import printable
    from .reader import read_file
    from .signature import SignatureUnavailable, signature_valid, trusted_keys
    from .trust import judge

    binary = read_file(args.file)
    binary.verify()
    name = printable(args.file)
    footer = binary.footer
    status = EXIT_BAD_INPUT
    if footer is None:
        print(f"{name}: not signed")
    else:
        try:
            valid = signature_valid(binary.data, footer)
            keys, problems = trusted_keys(args.key)
        except SignatureUnavailable as exc:
            print(f"{name}: signed by {footer.fingerprint}, cannot check it: {exc}")
            return EXIT_BAD_INPUT
        for problem in problems:
            print(f"warning: {printable(problem)}")
        if not valid:
            print(f"{name}: BAD signature (key {footer.fingerprint}): modified after signing")
        elif footer.public_key in keys:
            print(f"{name}: good signature by trusted key {footer.fingerprint}")
            print(f"  from {printable(keys[footer.public_key])}")
            status = EXIT_OK
        else:
            print(f"{name}: good signature by {footer.fingerprint}, which is not a trusted key")
    try:
        trust = judge(binary)
    except ValueError as exc:  # a bad SPIRVJIT_NATIVE
        print(f"native code: {exc}")
    else:
        verdict = "would run" if trust.allowed else "would NOT run"
        print(f"native code {verdict} here (policy {trust.policy}): {printable(trust.reason)}")
    return status
