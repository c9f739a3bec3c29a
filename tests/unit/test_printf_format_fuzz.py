"""Fuzzing OpenCL C printf's format parser (spirvjit/translate/printf.py): whatever the
format's bytes (read as Latin-1, as the translator reads them), parsing returns pieces or
raises FormatError (which the translator turns into a CompileError), and every
specification it hands to snprintf is ASCII, has no ``*`` and no ``%n``, and stays within
MAX_FIELD."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from spirvjit.translate.printf import MAX_FIELD, Conversion, FormatError, parse_format

# The characters a conversion specification is made of, and the Latin-1 look-alikes
# (superscript digits, which str.isdigit() takes; a no-break space; a fraction).
ALPHABET = "%%%-+ #0123456789.*vhlLjztdiouxXfFeEgGaAcspnq\xb2\xb3\xb9\xa0\xbd"
SPEC = re.compile(r"%[-+ #0]*([0-9]*)(?:\.([0-9]*))?(hh|h|ll|)[diouxXfFeEgGaAcsp]")


def check(text: str) -> None:
    try:
        pieces = parse_format(text)
    except FormatError:
        return
    for piece in pieces:
        if isinstance(piece, Conversion):
            spec = piece.c_spec()
            match = SPEC.fullmatch(spec)
            assert spec.isascii() and match, (text, spec)
            width, precision = match.group(1), match.group(2)
            assert int(width or 0) <= MAX_FIELD and int(precision or 0) <= MAX_FIELD


@settings(max_examples=1000, deadline=None, database=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=16))
def test_format_parser_on_printf_like_text(text: str) -> None:
    check(text)


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(st.binary(max_size=24))
def test_format_parser_on_any_bytes(data: bytes) -> None:
    check(data.decode("latin-1"))
