"""Whether a unified binary's native code may run here (docs/threat-model.md).

A native variant is machine code: loading it is like importing a Python extension
module, and nothing spirvjit checks inside it (digests, symbols) says who wrote it. So
it runs only under a policy, ``SPIRVJIT_NATIVE`` or ``load(..., native=...)``:

* ``never``: every kernel JITs from the SPIR-V;
* ``trusted`` (the default): only from a file that no other user can have written or can
  swap (``safe_paths``: the file and every directory up to ``/``), or that carries a
  valid signature by a trusted key (``signature``);
* ``always``: whatever the file's origin (the caller vouches for it).

The SPIR-V itself is never code in this sense: the JIT compiles it into code whose
memory accesses are those of the kernel (see the threat model for what that covers).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import config
from .reader import UnifiedBinary
from .signature import SignatureUnavailable, signature_valid, trusted_keys


@dataclass(frozen=True, slots=True)
class Trust:
    """The decision for one file: ``allowed`` or not, and why in words.

    ``location`` and ``signature`` say what was found about each (``signature`` is
    None when it was not needed and not checked).
    """

    policy: str
    allowed: bool
    reason: str
    location: str
    signature: str | None


def check_policy(policy: str | None) -> str:
    """``policy``, or the configured one when None; ValueError for an unknown name."""
    if policy is None:
        return config.native_policy()
    if policy not in config.NATIVE_POLICIES:
        raise ValueError(f"native={policy!r}: expected one of {', '.join(config.NATIVE_POLICIES)}")
    return policy


def signature_verdict(binary: UnifiedBinary) -> tuple[str, str]:
    """The state of ``binary``'s signature and what was found, in words. States:
    "trusted" (valid, by a trusted key), "untrusted" (valid, by another key), "tampered"
    (does not verify), "unsigned", "uncheckable" (no ``cryptography``)."""
    footer = binary.footer
    if footer is None:
        return "unsigned", "not signed"
    try:
        valid = signature_valid(binary.data, footer)
        keys, problems = trusted_keys()
    except SignatureUnavailable as exc:
        return "uncheckable", f"signed by {footer.fingerprint}, but it cannot be checked: {exc}"
    if not valid:
        return "tampered", (
            f"its signature (key {footer.fingerprint}) does not verify: the file was "
            "modified after it was signed"
        )
    if footer.public_key in keys:
        return "trusted", f"signed by trusted key {footer.fingerprint} ({keys[footer.public_key]})"
    note = f"; {problems[0]}" if problems else ""
    return "untrusted", f"signed by key {footer.fingerprint}, which is not a trusted key{note}"


def judge(binary: UnifiedBinary, policy: str | None = None, *, full: bool = False) -> Trust:
    """Whether ``binary``'s native variants may run under ``policy``.

    Under "trusted": a signature that is present is always checked; one that does not
    verify refuses the file (it was changed after signing), one by a trusted key admits
    it; otherwise the file's location decides. ``full`` (``inspect``, ``verify``) also
    reports the signature under the other policies.
    """
    policy = check_policy(policy)
    location = binary.location_problem
    where = "its location is safe (no other user can write it or swap it)"
    if location == UnifiedBinary.FROM_BYTES:
        where = f"no location: {location}"
    elif location is not None:
        where = f"unsafe location: {location}"
    if policy != "trusted":
        verdict = signature_verdict(binary)[1] if full else None
        if policy == "never":
            return Trust(policy, False, "native code is off (native=never)", where, verdict)
        return Trust(policy, True, "native code is always trusted (native=always)", where, verdict)
    state, verdict = signature_verdict(binary)
    if state == "tampered":
        return Trust(policy, False, verdict, where, verdict)
    if state == "trusted":
        return Trust(policy, True, verdict, where, verdict)
    if location is None:
        return Trust(policy, True, where, where, verdict)
    return Trust(policy, False, f"{where}; {verdict}", where, verdict)
