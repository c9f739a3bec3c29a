"""Unified binaries (``.ubin``): SPIR-V plus optional native code in one file.

``format`` holds the layout and the in-memory model, ``schema`` the JSON of the
metadata sections, ``writer`` and ``reader`` turn contents into bytes and back,
``select`` picks the native variant a device runs, ``build`` compiles inputs into
contents, ``api`` is what ``spirvjit.build``/``spirvjit.load`` call, and ``commands``,
``describe`` and ``quickrun`` are the command line's. The format is specified in
docs/ubin.md.
"""
