"""Source files are decoded as Python itself decodes them (BOM, PEP 263 declaration, else
UTF-8), including when the fast path skips tokenize."""

from __future__ import annotations

import codecs
import io
import tokenize

import pytest

from torchport.analyze.sources import BadFile, decode

CASES = [
    b"x = 1\n",
    b"x = 1",
    b"# plain\r\ny = 'caf\xc3\xa9'\r\n",
    codecs.BOM_UTF8 + b"x = 'caf\xc3\xa9'\n",
    b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n",
    b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '\x80'\n",
    b"# this line talks about coding style\nx = 1\n",
    b"x = 1\ny = 2\n# -*- coding: latin-1 -*- on line 3 does not count\n",
]


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
def test_decode_agrees_with_tokenize(data: bytes) -> None:
    expected, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text, encoding = decode(data)
    assert encoding == expected
    assert text == data.decode(expected)


def test_invalid_utf8_without_a_declaration_names_the_offset() -> None:
    with pytest.raises(BadFile, match=r"not UTF-8 \(invalid byte at offset 5\)"):
        decode(b"x = '\xff'\n")


def test_an_unknown_declared_encoding_is_a_bad_file() -> None:
    with pytest.raises(BadFile, match="bad encoding declaration"):
        decode(b"# coding: klingon\nx = 1\n")
