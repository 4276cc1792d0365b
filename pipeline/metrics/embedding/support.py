"""Whether a text states a claim: the lexical evidence of the grounding rule ``evidence``
(version 2, docs/grounding.md), over (claim, evidence, question) pairs.

The units are those of :mod:`pipeline.text.claims` (stems, numbers in one form, names) and,
for the scripts written without spaces, character bigrams. A claim is **stated** by its
evidence (the passages it is checked against, joined) when

1. every **anchor** is there: its numbers, its names (each word's stem, or the name as the
   initials of a capitalized run of the evidence, or its initials as a word of the evidence:
   ``WHO`` / ``World Health Organization``), every run of two or more Han, kana or Thai
   content characters with a character the evidence never holds (:data:`MIN_NOVEL_CHARACTERS`;
   a character is covered when a bigram holding it is in the evidence, so
   word order within a phrase and a grammatical character between two found words do not
   matter), and no yes/no fact of a record it mentions says otherwise
   (:mod:`pipeline.text.records`);
2. and, unless the evidence is a record (:func:`is_record`: a description is held to the
   record's facts, rule 1) or the claim sums up (``Overall, ...``), its **new units**
   (content stems, numbers and bigrams not in the question) are found:
   at least ``tau_lex`` of them, and fewer than :data:`MAX_HEAVY_MISSING` of its *specific*
   stems (those of words WordNet gives fewer than :data:`LIGHT_SENSES` senses: ``sourdough``
   is specific, ``offer`` or ``experience`` are not) missing while under
   :data:`SPECIFIC_COVERAGE` of its new units are found.

Words of the question count as given: "Who acquired Instagram? Facebook did." asserts
"Facebook".
"""

from __future__ import annotations

import io
from functools import cache

import polars as pl

from pipeline.rules.files import WORDNET_SENSES_FILE, read_bytes
from pipeline.text import claims, evidence, records
from pipeline.text.numbers import duration_numbers

#: A word with at least this many WordNet senses (over the lemmas sharing its stem) is light.
LIGHT_SENSES = 6
#: A claim with this many specific stems missing ...
MAX_HEAVY_MISSING = 4
#: ... is unsupported unless at least this share of its new units is found.
SPECIFIC_COVERAGE = 0.7
#: A claim about a record (:func:`is_record`) is held to its anchors and to missing fewer
#: than this many specific stems (a description adds words a record cannot hold).
RECORD_HEAVY_MISSING = 4
#: ... unless this share of its new units is found.
RECORD_COVERAGE = 0.4

#: A run of two or more uncovered Han, kana or Thai characters is a missing term when this
#: many of its characters occur nowhere in the evidence (黄渤 in a passage on another
#: director: a name); a run of characters that all occur there (a reworded verb, 荣获 beside
#: 获得) counts against the coverage only.
MIN_NOVEL_CHARACTERS = 1

_EMPTY = pl.lit([], pl.List(pl.String))


@cache
def light_stems() -> pl.DataFrame:
    """Stems (:data:`pipeline.text.claims.STEM_LENGTH` characters) of the one-word WordNet
    3.0 lemmas with at least :data:`LIGHT_SENSES` senses, one column ``stem``.

    >>> stems = set(light_stems()["stem"])
    >>> "offer" in stems, "sourd" in stems
    (True, False)
    """
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


@cache
def common_words() -> pl.Series:
    """Lowercased one-word WordNet 3.0 lemmas that are common words rather than names: with a
    verb, adjective or adverb sense, or three noun senses or more (``staff``, ``sorry``,
    ``customer`` is not one: one sense; ``norway`` is not one)."""
    data, _ = read_bytes(None, WORDNET_SENSES_FILE)
    senses = pl.read_parquet(io.BytesIO(data)).filter(~pl.col("lemma").str.contains("_"))
    return senses.group_by("lemma").agg(
        ((pl.col("pos") != "n").any() | (pl.len() >= 3)).alias("common")
    ).filter("common")["lemma"]


@cache
def wordnet_lemmas() -> pl.Series:
    """Every lowercased one-word WordNet 3.0 lemma."""
    data, _ = read_bytes(None, WORDNET_SENSES_FILE)
    lemmas = pl.read_parquet(io.BytesIO(data))["lemma"]
    return lemmas.filter(~lemmas.str.contains("_")).unique()


def claim_units(claim: pl.Expr, lang: pl.Expr) -> dict[str, pl.Expr]:
    """The units of a claim that :func:`claim_support` reads, as named expressions:
    ``_claim_text`` (frames removed, :func:`pipeline.text.claims.readable`), its stems ``cs``,
    numbers ``cn`` (``cd``: those read from a duration in the other unit) and ``names``;
    computed once when a claim is checked against several
    evidence texts."""
    text = claims.readable(claims.without_frames(claim))
    return {"_claim_text": text, "cs": claims.stems(text), "cn": claims.numbers(text),
            "cd": duration_numbers(text), "names": claims.names(text, lang)}


#: The columns of :func:`claim_support`'s decisions.
DECISION_SCHEMA = pl.Schema({"stated": pl.Boolean(), "lexical": pl.Boolean(),
                             "anchored": pl.Boolean(), "coverage": pl.Float64(),
                             "reasons": pl.List(pl.String())})


def claim_support(pairs: pl.DataFrame, *, tau_lex: float) -> pl.DataFrame:
    """The decision for each row of ``pairs`` (``claim``, ``evidence``, ``question``, and
    ``lang``, ``_row`` (for record facts); with the columns of :func:`claim_units` when the
    claim was read beforehand), one output row per input row, in order:
    ``stated`` (Boolean), ``lexical`` (whether rule 2 holds), ``anchored`` (rule 1),
    ``coverage`` and ``reasons`` (why not, ``List[String]``).

    >>> pairs = pl.DataFrame({
    ...     "claim": ["The tower is 330 metres tall.", "It was hosted in Tampa in 2021.",
    ...               "华为由任正非创立。", "华为由梁振英创立。"],
    ...     "evidence": ["The tower is 330 m high.", "It was hosted in Glendale in 2021.",
    ...                  "任正非创立了华为。", "任正非创立了华为。"],
    ...     "question": ["", "", "", ""], "lang": ["en", "en", "zh", "zh"], "_row": [0, 1, 2, 3]})
    >>> for row in claim_support(pairs, tau_lex=0.5).select("stated", "reasons").rows():
    ...     print(row)
    (True, [])
    (False, ['"Tampa" not in the passages'])
    (True, [])
    (False, ['"由梁振英" not in the passages', 'low overlap: 29% of its words in the passages, \
0 specific words missing'])
    """
    if pairs.is_empty():  # planning the rule costs about 0.1 s, with or without rows
        return pl.DataFrame(schema=DECISION_SCHEMA)
    if "_claim_text" not in pairs.columns:  # the claim's units, unless read beforehand
        pairs = pairs.with_columns(**claim_units(pl.col("claim"), pl.col("lang")))
    pairs = pairs.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_pair"), pl.col("question").fill_null(""),
    )
    texts = pl.concat([pairs.select(pl.col("evidence").alias("text")),
                       pairs.select(pl.col("question").alias("text"))]).unique()
    read = texts.with_columns(claims.readable(pl.col("text")).alias("_readable")).select(
        "text",
        claims.stems(pl.col("_readable")).alias("stems"),
        claims.numbers(pl.col("_readable")).alias("numbers"),
        claims.initials(pl.col("text")).alias("initials"),
        pl.col("text").str.extract_all(r"\b\p{Lu}{2}\b").alias("codes"),
        pl.col("_readable").str.to_lowercase().str.extract_all(claims.WORD)
        .list.eval(pl.element().str.slice(0, claims.STEM_LENGTH)).list.unique().alias("words"),
    )
    units = pairs.select(
        "_pair", "_row", "evidence", "question", "claim", "lang", "cs", "cn", "cd", "names",
    ).join(read.rename({"text": "evidence", "stems": "es", "numbers": "en", "initials": "ei",
                        "words": "ew", "codes": "ec"}),
           on="evidence", how="left", maintain_order="left"
    ).join(read.rename({"text": "question", "stems": "qs", "numbers": "qn", "initials": "qi",
                        "words": "qw", "codes": "qc"}),
           on="question", how="left", maintain_order="left")
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
        pl.col("s_missing").list.eval(~pl.element().is_in(light)).list.sum()
        .cast(pl.UInt32).alias("n_heavy_missing"),
    )
    n_new = pl.col("s_new").list.len() + pl.col("n_new").list.len() + pl.col("n_new_bigrams")
    n_found = (
        n_new - pl.col("s_missing").list.len() - pl.col("missing_numbers").list.len()
        - (pl.col("n_new_bigrams") - pl.col("n_found_bigrams"))
    )
    coverage = pl.when(n_new > 0).then(n_found / n_new).otherwise(1.0).cast(pl.Float64)
    found = found.with_columns(coverage.alias("coverage"))
    missing_names = _missing_names(found)
    opposed = _opposed(found)
    ranked = _unranked(pairs)
    conflicts = records.conflicts(
        pairs.select("_row", pl.col("_pair").alias("_claim"), pl.col("_claim_text").alias("claim")),
        records.record_facts(
            pairs.select("_row", pl.col("evidence").alias("passage")).unique("_row")
        ),
    ).rename({"_claim": "_pair"})
    decided = (
        found.join(missing_names, on="_pair", how="left", maintain_order="left")
        .join(conflicts, on="_pair", how="left", maintain_order="left")
        .join(opposed, on="_pair", how="left", maintain_order="left")
        .join(ranked, on="_pair", how="left", maintain_order="left")
        .with_columns(pl.col("missing_names", "conflicts", "opposed", "unranked")
                      .fill_null(_EMPTY))
    )
    anchored = (
        (pl.col("missing_numbers").list.len() == 0) & (pl.col("missing_names").list.len() == 0)
        & (pl.col("missing_characters").list.len() == 0) & (pl.col("conflicts").list.len() == 0)
        & (pl.col("opposed").list.len() == 0) & (pl.col("unranked").list.len() == 0)
    )
    # WordNet is English: elsewhere every word would count as specific.
    english = pl.col("lang").is_null() | pl.col("lang").is_in(["en", "und"])
    record = is_record(pl.col("evidence"))
    lexical = (
        (record & ((pl.col("n_heavy_missing") < RECORD_HEAVY_MISSING)
                   | (pl.col("coverage") >= RECORD_COVERAGE)))
        | (~record & (claims.sums_up(pl.col("claim")) | (pl.col("coverage") >= tau_lex) & ~(
            english & (pl.col("n_heavy_missing") >= MAX_HEAVY_MISSING)
            & (pl.col("coverage") < SPECIFIC_COVERAGE))))
    )
    return decided.select(
        (anchored & lexical).alias("stated"),
        lexical.alias("lexical"),
        anchored.alias("anchored"),
        "coverage",
        pl.concat_list(
            # A duration's number in the other unit is named only where no written number
            # is missing ("6 hours": number 6, not also 360).
            pl.col("missing_numbers").list.set_difference("cd").list.eval(
                pl.format("number {} not in the passages", pl.element())),
            pl.when(pl.col("missing_numbers").list.set_difference("cd").list.len() == 0)
            .then(pl.col("missing_numbers").list.eval(
                pl.format("number {} (a duration in the other unit) not in the passages",
                          pl.element())))
            .otherwise(_EMPTY),
            pl.col("missing_names").list.eval(pl.format('"{}" not in the passages',
                                                        pl.element())),
            pl.col("missing_characters").list.eval(pl.format('"{}" not in the passages',
                                                             pl.element())),
            pl.col("conflicts"),
            pl.col("opposed"),
            pl.col("unranked"),
            pl.when(~lexical).then(pl.concat_list(pl.format(
                "low overlap: {}% of its words in the passages, {} specific words missing",
                (pl.col("coverage") * 100).round(0).cast(pl.Int64), pl.col("n_heavy_missing"),
            ))).otherwise(_EMPTY),
        ).alias("reasons"),
    )


#: Between two letters of a spelled-out abbreviation: the rest of a word, then small words.
_SPELLED_GAP = (r"[\p{L}\p{M}]*[\s\-]+(?:(?:of|and|the|for|de|la|le|les|du|des|der|die|das|"
                r"für|und|del|y|et|el|los|las)\s+)*")


def is_record(text: pl.Expr) -> pl.Expr:
    """Whether ``text`` is a record: a JSON object or Python's printout of a dict (it opens
    with ``{`` and a quoted key). A claim about a record is held to its anchors (numbers,
    names, record facts): a description adds words a record cannot hold.

    >>> pl.select(is_record(pl.lit("{'name': 'Tinker\\'s', 'valet': False}"))).item()
    True
    """
    return text.str.contains(r"^\s*\{\s*['\"]\w[^'\"]*['\"]\s*:")


def _opposed(found: pl.DataFrame) -> pl.DataFrame:
    """``_pair`` and ``opposed``: the claim's words whose opposite the evidence uses instead
    (:data:`pipeline.text.claims.OPPOSITES`: "derecha" where the passage says "izquierda")."""
    said = found.select("_pair", pl.col("s_missing").alias("stem"), "es", "cs").explode(
        "stem").join(claims.opposite_stems(), on="stem", how="inner")
    contradicted = said.filter(
        pl.col("es").list.contains(pl.col("opposite"))
        & ~pl.col("cs").list.contains(pl.col("opposite"))
    )
    return contradicted.group_by("_pair", maintain_order=True).agg(
        pl.format('"{}…" where the passages say "{}…"', "stem", "opposite").alias("opposed")
    )


#: A superlative and the word after it (``largest city``, ``más cálido``, ``plus haut``).
_SUPERLATIVE = r"\b(?:most|least|más|menos|plus|moins|\p{L}{3,}est)\s+\p{L}+"
#: An ordinal that ranks a superlative (``second largest``, ``segundo año más cálido``).
_RANK = (r"\b(?:second|third|fourth|fifth|segund[oa]|tercer[oa]?|cuart[oa]|quint[oa]|"
         r"zweit\p{L}*|dritt\p{L}*|deuxième|troisième|quatrième|"
         r"\d+(?:st|nd|rd|th|º|ª|e|ème))\s+(?:\p{L}+\s+){0,2}")


def _unranked(pairs: pl.DataFrame) -> pl.DataFrame:
    """``_pair`` and ``unranked``: superlatives the claim states outright where the evidence
    only ranks them ("the warmest year" where the passage says "the second warmest year").
    Numbers do not catch it: the claim has no number to miss."""
    said = pairs.select(
        "_pair", pl.col("_claim_text").str.to_lowercase().alias("claim"),
        pl.col("evidence").str.to_lowercase().alias("evidence"),
    ).with_columns(
        # "más cálido que 2023" compares rather than ranks.
        pl.col("claim").str.extract_all(_SUPERLATIVE + r"(?:\s+\p{L}+)?").list.eval(
            pl.element().filter(~pl.element().str.contains(r"\s(?:que|than|als)$"))
            .str.extract(r"^(\S+\s+\S+)", 1)).alias("phrase")
    ).explode("phrase").drop_nulls("phrase")
    ranked = pl.lit(_RANK) + pl.col("phrase")
    outright = said.filter(
        ~pl.col("claim").str.contains(ranked)
        & (pl.col("evidence").str.count_matches(ranked) > 0)
        & (pl.col("evidence").str.count_matches(ranked)
           == pl.col("evidence").str.count_matches(pl.col("phrase"), literal=True))
    )
    return outright.group_by("_pair", maintain_order=True).agg(
        pl.format('"{}" where the passages rank it (second, third …)', "phrase")
        .alias("unranked")
    )


def _missing_names(found: pl.DataFrame) -> pl.DataFrame:
    """``_pair`` and ``missing_names``: names of the claim not in the evidence nor the question
    (every word's stem there, or the name as initials there, or its initials a word there)."""
    names = found.select("_pair", "names", "ei", "qi", "ew", "qw", "ec", "qc", "lang").explode(
        "names"
    ).drop_nulls("names")
    # The run opening the sentence: its first word is a name unless it is a common word.
    opener = pl.col("names").str.starts_with(claims.OPENER)
    first = pl.col("names").str.strip_chars_start(claims.OPENER).str.extract(r"^(\S+)", 1)
    lowered = first.str.to_lowercase()
    # A common word, a gerund ("Holding"), or the plural of any WordNet noun ("Customers").
    common = lowered.is_in(common_words().implode()) | lowered.str.ends_with("ing") | (
        lowered.str.ends_with("s") & lowered.str.replace(r"s$", "").is_in(
            wordnet_lemmas().implode()))
    # Outside English (WordNet's language) only an opening run of two words or more is a name.
    english = pl.col("lang").is_null() | pl.col("lang").is_in(["en", "und"])
    common = common | (~english & ~pl.col("names").str.contains(" "))
    names = names.with_columns(
        pl.when(opener & common).then(
            pl.col("names").str.replace(r"^\S+\s*", "")
        ).otherwise(pl.col("names").str.strip_chars_start(claims.OPENER)).alias("names")
    ).filter(pl.col("names") != "")
    words = pl.col("names").str.to_lowercase().str.replace_all(r"['’]s\b", "")\
        .str.replace_all(r"[.'’]", "")\
        .str.extract_all(claims.WORD).list.eval(
            pl.element().filter(~pl.element().is_in(sorted(claims.stopwords()))))
    stems = words.list.eval(pl.element().str.slice(0, claims.STEM_LENGTH))
    acronym = words.list.eval(pl.element().str.slice(0, 1)).list.join("")
    known = pl.concat_list("ew", "qw")
    # A one-word name the evidence writes as a two-letter code of its first two letters
    # ("California" / "CA", "Colorado" / "CO").
    code = words.list.first().str.slice(0, 2).str.to_uppercase()
    coded = (words.list.len() == 1) & (words.list.first().str.len_chars() > 3) & (
        pl.concat_list("ec", "qc").list.contains(code))
    present = (
        coded
        | (stems.list.set_difference(known).list.len() == 0)
        | pl.concat_list("ei", "qi").list.contains(words.list.join(""))
        | ((words.list.len() > 1) & known.list.contains(acronym))
    )
    # A short word of a name not found may be an abbreviation the evidence spells out
    # ("OMS" / "Organisation mondiale de la santé"): its letters open successive words there.
    abbreviations = pl.col("names").str.extract_all(r"\b\p{Lu}{2,5}\b").list.eval(
        pl.element().str.to_lowercase())
    names = names.with_columns(
        present.alias("_present"),
        abbreviations.list.set_difference(known).alias("_words"),
        (stems.list.set_difference(known).list.set_difference(abbreviations).list.len() > 0)
        .alias("_long_missing"),
    ).drop("ew", "qw", "ei", "qi", "ec", "qc")
    short = names.filter(~pl.col("_present")).explode("_words").drop_nulls("_words")
    spelled = short.join(
        found.select("_pair", "evidence", "question"), on="_pair", how="left"
    ).filter(
        pl.concat_str("evidence", "question", separator=" ").str.contains(
            pl.lit("(?i)\\b") + pl.col("_words").str.split("").list.join(_SPELLED_GAP)
            + pl.lit("")
        )
    )
    unexplained = short.join(spelled.select("_pair", "names", "_words"),
                             on=["_pair", "names", "_words"], how="anti")
    present = pl.col("_present") | ~pl.col("_long_missing") & ~pl.struct("_pair", "names").is_in(
        unexplained.select(pl.struct("_pair", "names")).to_series().implode())
    # A one-word capitalized common word (WordNet gives it many senses: "Earth", "Staff") is
    # no name.
    common = (words.list.len() == 1) & stems.list.first().is_in(light_stems()["stem"].implode())
    capitalized = names.filter(~present & ~common).select("_pair", "names")
    # Nationalities written in lower case (German, French, Spanish): "austriaco".
    lowercase = found.select(
        "_pair",
        pl.col("s_missing").list.eval(
            pl.element().filter(pl.element().is_in(claims.demonym_stems()))).alias("names"),
    ).explode("names").drop_nulls("names")
    # ... unless the word is a capitalized name already reported ("Paris", not "paris").
    reported = capitalized.select(
        "_pair", pl.col("names").str.to_lowercase().str.extract_all(claims.WORD)
        .list.eval(pl.element().str.slice(0, claims.STEM_LENGTH)).alias("names"),
    ).explode("names")
    lowercase = lowercase.join(reported, on=["_pair", "names"], how="anti")
    return pl.concat([capitalized, lowercase]).group_by("_pair", maintain_order=True).agg(
        pl.col("names").unique(maintain_order=True).alias("missing_names")
    )


def _characters(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per pair with Han, kana or Thai text: ``n_bigrams``, ``n_new_bigrams`` (not in the
    question), ``n_found_bigrams`` (new ones in the evidence) and ``missing_characters``: runs
    of two or more content characters that no found bigram covers."""
    runs = pairs.select(
        "_pair", evidence.character_runs(
            pl.col("_claim_text").str.to_lowercase().str.replace_all(claims.HAN_NUMERAL, " ")
        ).alias("run"),
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
    ).sort("_pair", "_run", "position").join(
        runs.select("_pair", "ev", "q").unique("_pair"), on="_pair", how="left"
    ).with_columns(
        (~pl.col("ev").str.contains(pl.col("character"), literal=True)
         & ~pl.col("q").str.contains(pl.col("character"), literal=True)).alias("novel")
    )
    block = pl.col("position") - pl.int_range(pl.len()).over("_pair", "_run")
    spans = (
        uncovered.with_columns(block.alias("_block"))
        .group_by("_pair", "_run", "_block", maintain_order=True)
        .agg(pl.col("character").str.join("").alias("span"), pl.col("novel").sum())
        .filter((pl.col("span").str.len_chars() >= 2)
                & (pl.col("novel") >= MIN_NOVEL_CHARACTERS))
        .group_by("_pair", maintain_order=True)
        .agg(pl.col("span").unique(maintain_order=True).alias("missing_characters"))
    )
    return counts.join(spans, on="_pair", how="left").with_columns(pl.col("_pair").cast(pl.Int64))
