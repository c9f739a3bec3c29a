"""Unified binaries (``.ubin``): SPIR-V plus optional native code in one file.

``format`` holds the layout and the in-memory model, ``schema`` the JSON of the
metadata sections, ``writer`` and ``reader`` turn contents into bytes and back,
``select`` picks the native variant a device runs, ``trust`` decides whether that
native code may run at all (``signature``: the Ed25519 footer and trusted keys),
``build`` compiles inputs into contents, ``api`` is what ``spirvjit.build``/
``spirvjit.load`` call, ``names`` makes names from a file safe to print and to use as
file names, and ``describe``, ``quickrun`` and ``signing`` (``sign``/``verify``) serve
the command line (spirvjit/cli/). The format is specified in docs/ubin.md, the trust
rules in docs/threat-model.md.
"""
