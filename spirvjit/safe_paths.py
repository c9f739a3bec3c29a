"""Whether another user could have written, or could swap, a file whose contents this
process would run as native code (a unified binary's variants, a kernel cache entry).

The rule is the one ssh applies to ``authorized_keys`` and sudo to its configuration:
the file must be a regular file owned by this user or root and writable by nobody
else, and so must every directory from it up to ``/`` (a directory writable by another
user lets that user rename the file away and put their own in its place). One
exception, for ``/tmp``-like directories: a directory with the sticky bit set may be
writable by others when it is owned by this user or root and the entry in it on the
way to the file is too, because the sticky bit stops others from renaming or removing
that entry.

Checked on the fully resolved path (``os.path.realpath``), so a symbolic link cannot
hide a directory from the check.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None  # no owners to check on Windows


def _owner_ok(st: os.stat_result, uid: int | None) -> bool:
    return uid is None or st.st_uid in (uid, 0)


def file_problem(st: os.stat_result, uid: int | None = None) -> str | None:
    """Why the file with status ``st`` (from ``fstat`` of the opened file) is not safe to
    trust, or None: not a regular file, owned by another user, or writable by others."""
    uid = _uid() if uid is None else uid
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if not _owner_ok(st, uid):
        return f"is owned by uid {st.st_uid}, not by you (uid {uid}) or root"
    if st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def parents_problem(
    path: str | os.PathLike, leaf: os.stat_result | None = None, uid: int | None = None
) -> str | None:
    """Why a directory above ``path`` lets another user replace it, or None when every
    directory up to ``/`` is safe (see the module docstring for the rule).

    ``leaf`` is the status of ``path`` itself (default: ``lstat``), used for the sticky
    bit exception of the directory that holds it. OSError when a directory cannot be
    examined.
    """
    uid = _uid() if uid is None else uid
    if uid is None:
        return None
    child = Path(os.path.realpath(path))
    child_st = leaf if leaf is not None else child.lstat()
    while True:
        parent = child.parent
        if parent == child:
            return None
        st = parent.lstat()
        if not _owner_ok(st, uid):
            return f"its directory {parent} is owned by uid {st.st_uid}, not by you or root"
        if st.st_mode & 0o022:
            sticky = st.st_mode & stat.S_ISVTX
            if not (sticky and _owner_ok(child_st, uid)):
                mode = stat.S_IMODE(st.st_mode)
                what = "writable by group or others" + (
                    f", and {child.name} in it is owned by uid {child_st.st_uid}" if sticky else ""
                )
                return f"its directory {parent} is {what} (mode {mode:04o})"
        child, child_st = parent, st
