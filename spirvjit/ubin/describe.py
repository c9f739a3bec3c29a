"""What ``spirvjit inspect`` shows, and finding a variant by the name a user types."""

from __future__ import annotations

import dataclasses

from ..errors import BinaryFormatError
from ..target import host_target
from .api import choice_for, overrule
from .format import Variant
from .names import printable
from .reader import UnifiedBinary
from .schema import build_to_json, kernels_to_json
from .trust import judge


def find_variant(
    binary: UnifiedBinary, name: str, module: int = 0, launch_facts: tuple[str, ...] = ()
) -> Variant:
    """The variant of ``module`` named ``name``: its full target ("cpu:TRIPLE:CPU"), its
    CPU or GPU ("x86-64-v3", "znver4", "sm_90") or "host" (this machine's exact CPU),
    specialised for ``launch_facts`` (sorted; () the generic code).

    Raises BinaryFormatError listing the variants when none or several match.
    """
    variants = [
        v for v in binary.variants if v.module == module and v.launch_facts == tuple(launch_facts)
    ]
    if name == "host":
        matches = [v for v in variants if v.target == host_target()]
    else:
        matches = [v for v in variants if name in (v.name, v.target.arch, v.target.name)]
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(printable(v.name) for v in binary.variants if v.module == module) or "none"
    what = "several variants match" if matches else "no native variant matches"
    raise BinaryFormatError(
        f"{printable(binary.name)}: {what} {name!r}; module {module} has: {listed}"
    )


def describe(binary: UnifiedBinary) -> dict:
    """The binary as a JSON-ready dict: modules, kernels, variants, selection, build, sources.

    Checks every section's SHA-256 on the way (BinaryFormatError when one is corrupted).
    """
    binary.verify()
    host = host_target()
    try:
        trust = judge(binary, full=True)
    except ValueError as exc:  # a bad SPIRVJIT_NATIVE: show the default's decision
        trust = judge(binary, "trusted", full=True)
        trust = dataclasses.replace(trust, reason=f"{exc}; under 'trusted': {trust.reason}")
    modules, selections = [], []
    for index in range(binary.module_count):
        section = binary.module_section(index)
        spirv = binary.module(index)
        choice = choice_for(binary, index, spirv, {})
        if choice.variant is not None and not trust.allowed:
            choice = overrule(choice, trust.reason)
        modules.append({"index": index, "size": section.raw_size, "stored": section.stored_size})
        selections.append(
            {
                "module": index,
                "host": str(host),
                "variant": choice.variant.name if choice.variant is not None else None,
                "how": choice.how,
                "reason": choice.reason,
                "rejected": [{"variant": n, "why": w} for n, w in choice.rejected],
            }
        )
    variants = []
    for variant in binary.variants:
        raw, stored = variant.objects.sizes()
        variants.append(
            {
                "target": variant.name,
                "cpu": variant.target.arch,
                "features": variant.target.features,
                "module": variant.module,
                "kernels": sorted(variant.objects),
                "size": raw,
                "stored": stored,
                "spec_constants": [list(p) for p in variant.spec_constants],
                "llvm_version": variant.llvm_version,
                "spirvjit_version": variant.spirvjit_version,
                # The launches it serves (GPU): [] any; else those keeping these facts.
                "launch_facts": list(variant.launch_facts),
                "problem": variant.problem,  # why no launch uses it, if so
            }
        )
    footer = binary.footer
    return {
        "file": binary.name,
        "size": binary.file_size,
        "native_trust": {
            "policy": trust.policy,
            "trusted": trust.allowed,
            "reason": trust.reason,
            "location": trust.location,
            "signature": trust.signature,
            "signer": footer.fingerprint if footer else None,
        },
        "format_version": binary.version,
        "modules": modules,
        "kernels": kernels_to_json(binary.kernels)["kernels"],
        "variants": variants,
        "selection": selections,
        "build": build_to_json(binary.build),
        "sources": [{"name": n, "size": len(binary.source(n))} for n in binary.source_names],
    }


def _arg(arg: dict) -> str:
    text = f"{arg['kind']} {arg['type'] or '?'}"
    if arg["kind"] in ("global", "constant", "local"):
        text = f"__{arg['kind']} {arg['type'] or 'void'}*"
    if arg["access"]:
        text += f" [{arg['access']}]"
    return f"{text} {arg['name']}"


def _printable_tree(value: object) -> object:
    """``value`` with every string in it passed through ``printable``."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _printable_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable_tree(v) for v in value]
    return value


def render(info: dict) -> str:
    """``describe``'s dict as the text ``spirvjit inspect`` prints.

    Every string, most of them read from the file, is escaped first (``printable``): a
    file must not be able to send control sequences to the user's terminal.
    """
    info = _printable_tree(info)
    lines = [f"{info['file']}: unified binary v{info['format_version']}, {info['size']} bytes"]
    for m in info["modules"]:
        lines.append(f"module {m['index']}: SPIR-V {m['size']} bytes ({m['stored']} stored)")
    lines.append("kernels:")
    for k in info["kernels"]:
        lines.append(f"  {k['name']}({', '.join(_arg(a) for a in k['args'])})")
        extra = []
        if k["required_work_group_size"]:
            extra.append(f"reqd_work_group_size {tuple(k['required_work_group_size'])}")
        if k["work_group_size_hint"]:
            extra.append(f"work_group_size_hint {tuple(k['work_group_size_hint'])}")
        if k["execution_modes"]:
            extra.append("modes: " + ", ".join(k["execution_modes"]))
        if extra:
            lines.append("    " + "; ".join(extra))
    lines.append("native variants:" if info["variants"] else "native variants: none")
    t = info["native_trust"]
    if info["variants"]:
        verdict = "trusted" if t["trusted"] else "NOT trusted (the kernels JIT instead)"
        lines.append(f"  native code {verdict} under policy {t['policy']}: {t['reason']}")
        lines.append(f"  location: {t['location']}")
    if info["variants"] or t["signer"]:
        lines.append(f"  signature: {t['signature'] or 'not checked'}")
    for v in info["variants"]:
        lines.append(
            f"  {v['target']}: {len(v['kernels'])} kernels, {v['size']} bytes "
            f"({v['stored']} stored), module {v['module']}"
        )
        if v["problem"]:
            lines.append(f"    REJECTED (no launch uses it): {v['problem']}")
        elif v["launch_facts"]:
            facts = ", ".join(v["launch_facts"])
            lines.append(f"    specialised: runs launches that keep {facts}")
        elif not v["target"].startswith("cpu:"):
            lines.append("    generic: runs any launch (those the specialised code cannot)")
    for s in info["selection"]:
        picked = s["variant"] or "JIT from SPIR-V"
        lines.append(f"this machine ({s['host']}) runs module {s['module']}: {picked}")
        lines.append(f"  {s['how']}: {s['reason']}")
        lines += [f"  passed over {r['variant']}: {r['why']}" for r in s["rejected"]]
    b = info["build"]
    lines.append(f"build: producer {b['producer']}, compiler {b['compiler'] or '-'}")
    if b["compiler_version"]:
        lines.append(f"  {b['compiler_version']}")
    lines.append(f"  flags: {' '.join(b['flags']) or '(none)'}")
    lines += [f"  input {i['name']} sha256 {i['sha256']}" for i in b["inputs"]]
    lines.append(f"  source digest {b['source_digest']}, spirvjit {b['spirvjit_version']}")
    if info["sources"]:
        lines.append(
            "sources: " + ", ".join(f"{s['name']} ({s['size']} bytes)" for s in info["sources"])
        )
    return "\n".join(lines) + "\n"
