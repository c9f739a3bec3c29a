"""Writing a file so that readers see the old file or the whole new one, never a part.

The kernel cache writes its entries and records this way, and ``spirvjit build`` its
unified binaries.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

# Temporary files are named ``.<name>.<pid>.<random><TEMP_SUFFIX>`` beside the target,
# so a cache prune can recognise (and remove) those of writers that died.
TEMP_SUFFIX = ".tmp"


def write_atomic(path: str | os.PathLike, data: bytes, mode: int = 0o600) -> None:
    """Writes ``data`` to ``path`` through a temporary file in the same directory and
    ``os.replace``. ``mode`` is masked by the umask, as for any new file.

    No fsync: a crash of the machine can leave a damaged file, which every reader
    detects (cache entries by their digest, records by their JSON, unified binaries by
    their section digests) and treats as missing or corrupt.
    """
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temp, flags | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
