"""The MD5 kernel (pipeline.text.kernels.md5) against hashlib: every padding case and random
texts, and the buckets of the statistics built on it."""

from __future__ import annotations

import hashlib

import polars as pl
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.stats import bucket_of
from pipeline.text.kernels.buffers import string_buffers
from pipeline.text.kernels.md5 import md5_first_words


def first_words(texts: list[str]) -> list[int]:
    offsets, data, _ = string_buffers(pl.Series(texts, dtype=pl.String))
    return md5_first_words(offsets, data).tolist()


def reference(text: str) -> int:
    return int(hashlib.md5(text.encode()).hexdigest()[:8], 16)


def test_every_length_around_the_padding_boundaries():
    # 55 bytes fit one block with the length, 56-63 need a second, 64 fills one exactly.
    texts = ["a" * n for n in range(0, 200)] + ["é" * n for n in range(0, 70)]
    assert first_words(texts) == [reference(t) for t in texts]


def test_known_digests():
    # RFC 1321's test suite: md5("") = d41d8cd9..., md5("abc") = 90015098...
    assert first_words(["", "abc", "message digest"]) == [0xD41D8CD9, 0x90015098, 0xF96B697D]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.text(max_size=150), max_size=40))
def test_equals_hashlib(texts):
    assert first_words(texts) == [reference(t) for t in texts]


def test_buckets_are_the_top_bits_and_a_null_goes_to_bucket_0():
    ids = ["q1", "what is rag?", "é", "", None]
    got = bucket_of(pl.Series(ids, dtype=pl.String), 2048).to_list()
    assert got == [reference(i) >> (32 - 11) for i in ids[:-1]] + [0]
