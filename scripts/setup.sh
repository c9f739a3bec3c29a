#!/usr/bin/env bash
# Set up a Debian 12 machine to build, test and demo spirvjit. Idempotent: a re-run
# with everything in place only checks (about a second).
#
#   1. Debian packages (compilers, SPIRV-Tools, PoCL): installed with apt when root,
#      otherwise listed with the command to run.
#   2. spirvjit itself, editable, with its test extras: pip install -e '.[test]'.
#
# The Python used is $SPIRVJIT_PYTHON, else ./.venv if an earlier run made one, else
# python3. A python3 that refuses pip (PEP 668 "externally managed", e.g. Debian's
# own /usr/bin/python3) gets a ./.venv instead. Scripts that `source` this file
# get that interpreter as $PY and the repository root as $REPO.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# What the tests, demo and benchmarks run: clang-22 (OpenCL C and HIP -> SPIR-V;
# clang-tools-22 has clang-offload-bundler for HIP bundles), lld-22 (AMD code objects,
# CPU kernels in debug mode), llvm-22 and libclc-22 (device libraries), clang-15 +
# llvm-spirv-15 (the second SPIR-V producer, and -g), SPIRV-Tools (spirv-val/-as/-dis),
# PoCL (reference results), gdb (the source-level debugging tests).
# On the standard Debian 12 image clang-22, lld-22, llvm-22 and libclc-22 come from
# the bookworm-security suite (deb.debian.org/debian-security), the rest from bookworm.
DEBIAN_PACKAGES=(
    clang-22 clang-tools-22 lld-22 llvm-22 libclc-22
    clang-15 llvm-spirv-15
    spirv-tools spirv-headers
    pocl-opencl-icd ocl-icd-libopencl1
    gdb
)

log() { echo "setup: $*" >&2; }

is_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing_packages() {
    local pkg
    for pkg in "$@"; do
        is_installed "$pkg" || echo "$pkg"
    done
}

install_debian_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    ((${#missing[@]} == 0)) && return 0
    if ((EUID != 0)); then
        log "missing Debian packages: ${missing[*]}"
        log "install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
        return 1
    fi
    log "installing ${missing[*]}"
    if [[ -z "${_SPIRVJIT_APT_UPDATED:-}" ]]; then
        apt-get update -qq
        _SPIRVJIT_APT_UPDATED=1
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; then
        log "apt-get could not install ${missing[*]}."
        log "clang-22/lld-22/llvm-22/libclc-22 need bookworm-security in the apt sources"
        log "(deb.debian.org/debian-security) or apt.llvm.org's llvm-toolchain-bookworm-22."
        return 1
    fi
}

is_externally_managed() {
    "$1" - <<'EOF'
import os, sys, sysconfig
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if sys.prefix == sys.base_prefix and os.path.exists(marker) else 1)
EOF
}

choose_python() {
    if [[ -n "${SPIRVJIT_PYTHON:-}" ]]; then
        PY="$SPIRVJIT_PYTHON"
    elif [[ -x "$REPO/.venv/bin/python" ]]; then
        PY="$REPO/.venv/bin/python"
    elif is_externally_managed python3; then
        log "python3 is externally managed (PEP 668); using a virtual environment in .venv"
        install_debian_packages python3-venv
        python3 -m venv "$REPO/.venv"
        PY="$REPO/.venv/bin/python"
    else
        PY=python3
    fi
    if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
        log "$PY is $("$PY" --version 2>&1); spirvjit needs Python 3.10 or newer"
        return 1
    fi
}

# The pip step is skipped when pyproject.toml is unchanged since the last install
# into this interpreter and every requirement is still installed.
stamp_value() {
    echo "$("$PY" -c 'import sys; print(sys.executable)') $(sha256sum "$REPO/pyproject.toml")"
}

requirements_installed() {
    "$PY" - <<'EOF'
import importlib.metadata as md, re, sys
try:
    requires = md.requires("spirvjit") or []
    for req in requires:
        if "extra" in req and 'extra == "test"' not in req:
            continue
        md.version(re.match(r"[A-Za-z0-9._-]+", req).group(0))
except md.PackageNotFoundError:
    sys.exit(1)
EOF
}

install_python_packages() {
    local stamp="$REPO/.setup-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$(stamp_value)" ]] && requirements_installed; then
        return 0
    fi
    log "pip install -e '.[test]' with $PY"
    PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --disable-pip-version-check \
        -e "$REPO[test]"
    stamp_value >"$stamp"
}

install_debian_packages "${DEBIAN_PACKAGES[@]}"
choose_python
install_python_packages
log "ready ($("$PY" --version 2>&1) at $(command -v "$PY"))"
