"""spirv-val accepts every module of the suite, except the known producer defects
listed in harness.py (KNOWN_CLANG22_SPIRV_VAL_ERRORS, KNOWN_TRANSLATOR15_SPIRV_VAL_ERRORS)."""

from __future__ import annotations

import pytest
from harness import build, known_spirv_val_error, spirv_val
from sources import CASES


def _env(spirv: bytes) -> str:
    # Validate against the SPIR-V version the producer declared in the header.
    version = int.from_bytes(spirv[4:8], "little")
    return f"spv1.{(version >> 8) & 0xFF}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_validates(name, producer):
    case = CASES[name]
    if producer == "translator" and case.translator:
        pytest.skip(f"translator pair: {case.translator}")
    spirv = build(case.source, case.options, producer).spirv
    rc, log = spirv_val(spirv, _env(spirv))
    if rc == 0:
        return
    why = known_spirv_val_error(log, producer)
    assert why, f"spirv-val rejects {name} ({producer}):\n{log}"
