"""Whether a text states a claim: the lexical evidence of the grounding rule ``evidence``
(version 2, docs/grounding.md), over (claim, evidence, question) pairs.

The units are those of :mod:`pipeline.text.claims` (stems, numbers in one form, names) and,
for the scripts written without spaces, character bigrams. A claim is **stated** by its
evidence (the passages it is checked against, joined) when

1. every **anchor** is there: its numbers, its names (each word's stem, or the name as the
   initials of a capitalized run of the evidence, or its initials as a word of the evidence:
   ``WHO`` / ``World Health Organization``), every run of two or more Han, kana or Thai
   content characters (a character is covered when a bigram holding it is in the evidence, so
   word order within a phrase and a grammatical character between two found words do not
   matter), and no yes/no fact of a record it mentions says otherwise
   (:mod:`pipeline.text.records`);
2. and its **new units** (content stems, numbers and bigrams not in the question) are found:
   at least ``tau_lex`` of them, and fewer than :data:`MAX_HEAVY_MISSING` of its *specific*
   stems (those of words WordNet gives fewer than :data:`LIGHT_SENSES` senses: ``sourdough``
   is specific, ``offer`` or ``experience`` are not) missing while under
   :data:`SPECIFIC_COVERAGE` of its new units are found.

Words of the question count as given: "Who acquired Instagram? Facebook did." asserts
"Facebook".
"""

from __future__ import annotations

from functools import cache

import polars as pl

from pipeline.rules.files import WORDNET_SENSES_FILE, read_bytes
from pipeline.text import claims, evidence, records

#: A word with at least this many WordNet senses (over the lemmas sharing its stem) is light.
LIGHT_SENSES = 6
#: A claim with this many specific stems missing ...
MAX_HEAVY_MISSING = 4
#: ... is unsupported unless at least this share of its new units is found.
SPECIFIC_COVERAGE = 0.7

_EMPTY = pl.lit([], pl.List(pl.String))


@cache
def light_stems() -> pl.DataFrame:
    """Stems (:data:`pipeline.text.claims.STEM_LENGTH` characters) of the one-word WordNet
    3.0 lemmas with at least :data:`LIGHT_SENSES` senses, one column ``stem``.

    >>> stems = set(light_stems()["stem"])
    >>> "offer" in stems, "sourd" in stems
    (True, False)
    """
    import io

    data, _ = read_bytes(None, WORDNET_SENSES_FILE)
    senses = pl.read_parquet(io.BytesIO(data))
    return (
        senses.filter(~pl.col("lemma").str.contains("_"))
        .group_by("lemma").agg(pl.len().alias("n"))
        .group_by(pl.col("lemma").str.slice(0, claims.STEM_LENGTH).alias("stem"))
        .agg(pl.col("n").max())
        .filter(pl.col("n") >= LIGHT_SENSES)
        .select("stem")
    )


def claim_support(pairs: pl.DataFrame, *, tau_lex: float) -> pl.DataFrame:
    """The decision for each row of ``pairs`` (``claim``, ``evidence``, ``question``, and
    ``lang``, ``_row`` (for record facts)), one output row per input row, in order:
    ``stated`` (Boolean), ``lexical`` (whether rule 2 holds), ``anchored`` (rule 1),
    ``coverage`` and ``reasons`` (why not, ``List[String]``).

    >>> pairs = pl.DataFrame({
    ...     "claim": ["The tower is 330 metres tall.", "It was hosted in Tampa in 2021.",
    ...               "华为由任正非创立。", "华为由梁振英创立。"],
    ...     "evidence": ["The tower is 330 m high.", "It was hosted in Glendale in 2021.",
    ...                  "任正非创立了华为。", "任正非创立了华为。"],
    ...     "question": ["", "", "", ""], "lang": ["en", "en", "zh", "zh"], "_row": [0, 1, 2, 3]})
    >>> claim_support(pairs, tau_lex=0.5).select("stated", "reasons").rows()
    [(True, []), (False, ['"tampa" not in the passages']), (True, []), (False, ['"由梁振英" not in the passages', 'low overlap: 25% of its words in the passages, 1 specific words missing'])]
    """
    pairs = pairs.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_pair"),
        claims.readable(claims.without_frames(pl.col("claim"))).alias("_claim_text"),
        pl.col("question").fill_null(""),
    )
    texts = pl.concat([pairs.select(pl.col("evidence").alias("text")),
                       pairs.select(pl.col("question").alias("text"))]).unique()
    read = texts.with_columns(claims.readable(pl.col("text")).alias("_readable")).select(
        "text",
        claims.stems(pl.col("_readable")).alias("stems"),
        claims.numbers(pl.col("_readable")).alias("numbers"),
        claims.initials(pl.col("text")).alias("initials"),
        pl.col("_readable").str.to_lowercase().str.extract_all(r"[^\W_]+")
        .list.eval(pl.element().str.slice(0, claims.STEM_LENGTH)).list.unique().alias("words"),
    )
    units = pairs.select(
        "_pair", "_row", "evidence", "question", "claim",
        claims.stems(pl.col("_claim_text")).alias("cs"),
        claims.numbers(pl.col("_claim_text")).alias("cn"),
        claims.names(pl.col("_claim_text"), pl.col("lang")).alias("names"),
    ).join(read.rename({"text": "evidence", "stems": "es", "numbers": "en", "initials": "ei",
                        "words": "ew"}), on="evidence", how="left", maintain_order="left"
    ).join(read.rename({"text": "question", "stems": "qs", "numbers": "qn", "initials": "qi",
                        "words": "qw"}), on="question", how="left", maintain_order="left")
    characters = _characters(pairs)
    units = units.join(characters, on="_pair", how="left", maintain_order="left").with_columns(
        pl.col("n_bigrams", "n_new_bigrams", "n_found_bigrams").fill_null(0),
        pl.col("missing_characters").fill_null(_EMPTY),
    )
    light = light_stems()["stem"].implode()
    found = units.with_columns(
        pl.col("cs").list.set_difference("qs").alias("s_new"),
        pl.col("cn").list.set_difference("qn").alias("n_new"),
    ).with_columns(
        pl.col("s_new").list.set_difference("es").alias("s_missing"),
        pl.col("n_new").list.set_difference("en").alias("missing_numbers"),
    ).with_columns(
        pl.col("s_missing").list.set_difference(light).list.len().alias("n_heavy_missing"),
    )
    n_new = pl.col("s_new").list.len() + pl.col("n_new").list.len() + pl.col("n_new_bigrams")
    n_found = (
        n_new - pl.col("s_missing").list.len() - pl.col("missing_numbers").list.len()
        - (pl.col("n_new_bigrams") - pl.col("n_found_bigrams"))
    )
    coverage = pl.when(n_new > 0).then(n_found / n_new).otherwise(1.0).cast(pl.Float64)
    found = found.with_columns(coverage.alias("coverage"))
    missing_names = _missing_names(found)
    conflicts = records.conflicts(
        pairs.select("_row", pl.col("_pair").alias("_claim"), pl.col("_claim_text").alias("claim")),
        records.record_facts(
            pairs.select("_row", pl.col("evidence").alias("passage")).unique("_row")
        ),
    ).rename({"_claim": "_pair"})
    decided = (
        found.join(missing_names, on="_pair", how="left", maintain_order="left")
        .join(conflicts, on="_pair", how="left", maintain_order="left")
        .with_columns(pl.col("missing_names", "conflicts").fill_null(_EMPTY))
    )
    anchored = (
        (pl.col("missing_numbers").list.len() == 0) & (pl.col("missing_names").list.len() == 0)
        & (pl.col("missing_characters").list.len() == 0) & (pl.col("conflicts").list.len() == 0)
    )
    lexical = claims.sums_up(pl.col("claim")) | (pl.col("coverage") >= tau_lex) & ~(
        (pl.col("n_heavy_missing") >= MAX_HEAVY_MISSING)
        & (pl.col("coverage") < SPECIFIC_COVERAGE)
    )
    return decided.select(
        (anchored & lexical).alias("stated"),
        lexical.alias("lexical"),
        anchored.alias("anchored"),
        "coverage",
        pl.concat_list(
            pl.col("missing_numbers").list.eval(pl.format("number {} not in the passages",
                                                          pl.element())),
            pl.col("missing_names").list.eval(pl.format('"{}" not in the passages',
                                                        pl.element())),
            pl.col("missing_characters").list.eval(pl.format('"{}" not in the passages',
                                                             pl.element())),
            pl.col("conflicts"),
            pl.when(~lexical).then(pl.concat_list(pl.format(
                "low overlap: {}% of its words in the passages, {} specific words missing",
                (pl.col("coverage") * 100).round(0).cast(pl.Int64), pl.col("n_heavy_missing"),
            ))).otherwise(_EMPTY),
        ).alias("reasons"),
    )


def _missing_names(found: pl.DataFrame) -> pl.DataFrame:
    """``_pair`` and ``missing_names``: names of the claim not in the evidence nor the question
    (every word's stem there, or the name as initials there, or its initials a word there)."""
    names = found.select("_pair", "names", "es", "qs", "ei", "qi", "ew", "qw").explode(
        "names"
    ).drop_nulls("names")
    words = pl.col("names").str.replace_all(r"[.'’]", "").str.extract_all(r"[^\W_]+")
    stems = words.list.eval(pl.element().str.slice(0, claims.STEM_LENGTH))
    acronym = words.list.eval(pl.element().str.slice(0, 1)).list.join("")
    known = pl.concat_list("ew", "qw")
    present = (
        (stems.list.set_difference(known).list.len() == 0)
        | pl.concat_list("ei", "qi").list.contains(words.list.join(""))
        | ((words.list.len() > 1) & known.list.contains(acronym))
    )
    # A one-word capitalized common word (WordNet gives it many senses: "Earth", "Staff") is
    # no name.
    common = (words.list.len() == 1) & stems.list.first().is_in(light_stems()["stem"].implode())
    return names.filter(~present & ~common).group_by("_pair", maintain_order=True).agg(
        pl.col("names").unique(maintain_order=True).alias("missing_names")
    )


def _characters(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per pair with Han, kana or Thai text: ``n_bigrams``, ``n_new_bigrams`` (not in the
    question), ``n_found_bigrams`` (new ones in the evidence) and ``missing_characters``: runs
    of two or more content characters that no found bigram covers."""
    runs = pairs.select(
        "_pair", evidence.character_runs(pl.col("_claim_text").str.to_lowercase()).alias("run"),
        pl.col("evidence").str.to_lowercase().alias("ev"),
        pl.col("question").str.to_lowercase().alias("q"),
    ).filter(pl.col("run").list.len() > 0)
    if runs.is_empty():
        return pl.DataFrame(schema={"_pair": pl.Int64, "n_bigrams": pl.UInt32,
                                    "n_new_bigrams": pl.UInt32, "n_found_bigrams": pl.UInt32,
                                    "missing_characters": pl.List(pl.String)})
    runs = runs.with_columns(pl.int_ranges(0, pl.col("run").list.len()).alias("_run")).explode(
        "run", "_run"
    )
    bigrams = runs.with_columns(
        pl.int_ranges(0, (pl.col("run").str.len_chars() - 1).clip(lower_bound=1)).alias("_offset")
    ).explode("_offset").with_columns(
        pl.col("run").str.slice(pl.col("_offset"), 2).alias("bigram")
    ).with_columns(
        pl.col("ev").str.contains(pl.col("bigram"), literal=True).alias("in_evidence"),
        pl.col("q").str.contains(pl.col("bigram"), literal=True).alias("in_question"),
    )
    counts = bigrams.group_by("_pair").agg(
        pl.len().cast(pl.UInt32).alias("n_bigrams"),
        (~pl.col("in_question")).sum().cast(pl.UInt32).alias("n_new_bigrams"),
        (~pl.col("in_question") & pl.col("in_evidence")).sum().cast(pl.UInt32)
        .alias("n_found_bigrams"),
    )
    # A character is covered when a bigram holding it is in the evidence or the question.
    hit = bigrams.filter(pl.col("in_evidence") | pl.col("in_question")).select(
        "_pair", "_run", pl.concat_list("_offset", pl.col("_offset") + 1).alias("position")
    ).explode("position").unique()
    chars = runs.select(
        "_pair", "_run", "run",
        pl.int_ranges(0, pl.col("run").str.len_chars()).alias("position"),
    ).explode("position").with_columns(
        pl.col("run").str.slice(pl.col("position"), 1).alias("character")
    )
    uncovered = chars.join(hit, on=["_pair", "_run", "position"], how="anti").filter(
        ~pl.col("character").str.contains(f"[{evidence.FUNCTION_CHARACTERS}]")
    ).sort("_pair", "_run", "position")
    block = pl.col("position") - pl.int_range(pl.len()).over("_pair", "_run")
    spans = (
        uncovered.with_columns(block.alias("_block"))
        .group_by("_pair", "_run", "_block", maintain_order=True)
        .agg(pl.col("character").str.join("").alias("span"))
        .filter(pl.col("span").str.len_chars() >= 2)
        .group_by("_pair", maintain_order=True)
        .agg(pl.col("span").unique(maintain_order=True).alias("missing_characters"))
    )
    return counts.join(spans, on="_pair", how="left").with_columns(pl.col("_pair").cast(pl.Int64))
