"""Structured sources read as facts: the yes/no/unknown attributes of a record.

A passage that is a record (a JSON object, Python's printout of a dict, ``key: value`` lines)
states, for each attribute with a boolean or null value, that the thing has it (``True``,
``"yes"``, ``"free"``), has it not (``False``, ``"no"``) or that it is unknown (``None``,
``null``). A sentence that **mentions** such an attribute must say the same (docs/grounding.md):

* mentioned: a word of the sentence, or two adjacent words written together, is the attribute's
  *probe* (its last camelCase word, or its words joined without the generic prefixes
  ``Restaurants``/``Business``: ``RestaurantsTakeOut`` -> ``takeout``, ``OutdoorSeating`` ->
  ``outdoorseating`` and ``seating``), ignoring a final ``s``; probes under four letters, and
  probes that also occur in the record's free text (a review that says "casual"), are not used;
* negated: a negation (:data:`NEGATIONS`) up to ten words before the mention or four words
  after it, in the same clause (clauses end at ``;``, ``but``, ``while``, ``although`` ...);
* a **conflict**: an unknown attribute mentioned at all, a false one mentioned without
  negation, a true one mentioned with a negation.

Everything is relational polars work (explode, join, group), never per row.
"""

from __future__ import annotations

import polars as pl

#: A key and a boolean, null or short string value, quoted as JSON or Python prints them.
_FACT = r"""['"](\w+)['"]\s*:\s*(True|False|None|true|false|null|'[^']{0,20}'|"[^"]{0,20}")"""
#: Values read as having (pos), not having (neg) or unknown (unk).
POLARITY: dict[str, str] = {
    "true": "pos", "yes": "pos", "free": "pos", "paid": "pos",
    "false": "neg", "no": "neg", "none": "unk", "null": "unk",
}
_GENERIC_PREFIXES = ["restaurants", "business"]
#: Words that negate what follows (or precedes) them in their clause.
NEGATIONS = ["not", "no", "without", "lack", "lacks", "lacking", "neither", "nor", "none",
             "never", "unavailable", "nicht", "kein", "keine", "pas", "sin", "sans"]
_CLAUSE_ENDS = [";", "but", "while", "although", "however", "though", "whereas", "yet"]
_BEFORE, _AFTER = 10, 4


def record_facts(passages: pl.DataFrame) -> pl.DataFrame:
    """The attribute facts of each passage: ``passages`` has ``_row`` and ``passage``; the
    result has ``_row``, ``key``, ``probe`` and ``polarity`` (``pos``/``neg``/``unk``), one row
    per (row, probe) whose polarity is the same wherever the probe is a key.

    >>> facts = record_facts(pl.DataFrame({"_row": [0], "passage": [
    ...     "{'valet': False, 'RestaurantsTakeOut': True, 'Music': None, 'review': 'casual'}"]}))
    >>> sorted(facts.select("probe", "polarity").rows())
    [('music', 'unk'), ('takeout', 'pos'), ('valet', 'neg')]
    """
    found = passages.select(
        "_row", pl.col("passage").str.extract_all(_FACT).alias("fact")
    ).explode("fact").drop_nulls("fact")
    key = pl.col("fact").str.extract(r"""^['"](\w+)""")
    words = key.str.replace_all(r"(\p{Ll})(\p{Lu})", "$1 $2").str.to_lowercase().str.extract_all(
        r"\p{L}+"
    )
    joined = words.list.eval(pl.element().filter(~pl.element().is_in(_GENERIC_PREFIXES)))
    facts = found.select(
        "_row", key.alias("key"),
        pl.concat_list(words.list.last(), joined.list.join("")).list.eval(
            pl.element().str.replace(r"s$", "")
        ).list.unique().alias("probe"),
        pl.col("fact").str.extract(r""":\s*['"]?([^'"]*)['"]?$""").str.to_lowercase()
        .replace_strict(POLARITY, default=None).alias("polarity"),
    ).drop_nulls("polarity").explode("probe").filter(pl.col("probe").str.len_chars() >= 4)
    facts = facts.unique(["_row", "probe", "polarity"], maintain_order=True).filter(
        pl.col("polarity").n_unique().over("_row", "probe") == 1
    )
    free_text = passages.select(
        "_row",
        pl.col("passage").str.replace_all(r"""['"]\w+['"]\s*:""", " ").str.to_lowercase()
        .str.extract_all(r"\p{L}+").alias("probe"),
    ).explode("probe").with_columns(pl.col("probe").str.replace(r"s$", "")).unique()
    return facts.join(free_text, on=["_row", "probe"], how="anti", maintain_order="left")


def conflicts(claims: pl.DataFrame, facts: pl.DataFrame) -> pl.DataFrame:
    """The record facts each claim contradicts: ``claims`` has ``_row``, ``_claim`` and
    ``claim``; ``facts`` is :func:`record_facts` of the row's passages. The result has
    ``_claim`` and ``conflicts`` (reasons such as ``"valet" is False in the record``), only for
    claims with at least one.

    >>> facts = record_facts(pl.DataFrame({"_row": [0], "passage": [
    ...     "{'valet': False, 'RestaurantsTakeOut': True, 'Music': None}"]}))
    >>> claims = pl.DataFrame({"_row": [0, 0, 0], "_claim": [0, 1, 2], "claim": [
    ...     "It offers valet parking.", "There is no valet but take-out is offered.",
    ...     "It does not offer take out, and it plays music."]})
    >>> for row in conflicts(claims, facts).sort("_claim").rows():
    ...     print(row)
    (0, ['"valet" is False in the record'])
    (2, ['"Music" is unknown in the record', '"RestaurantsTakeOut" is True in the record'])
    """
    empty = pl.DataFrame(schema={"_claim": pl.Int64, "conflicts": pl.List(pl.String)})
    if facts.is_empty() or claims.is_empty():
        return empty
    tokens = claims.join(facts.select("_row").unique(), on="_row", how="semi").select(
        "_row", "_claim",
        pl.col("claim").str.to_lowercase().str.replace_all(r"n't\b", " not")
        .str.extract_all(r"[^\W_]+|;").alias("word"),
    ).with_columns(pl.int_ranges(pl.col("word").list.len()).alias("position"))
    tokens = tokens.explode("word", "position").drop_nulls("word").with_columns(
        pl.col("word").is_in(_CLAUSE_ENDS).cum_sum().over("_claim").alias("clause"),
    )
    candidates = tokens.with_columns(
        pl.concat_list(
            pl.col("word"), pl.col("word") + pl.col("word").shift(-1).over("_claim")
        ).list.eval(pl.element().str.replace(r"s$", "")).alias("probe")
    ).explode("probe")
    mentions = candidates.join(facts, on=["_row", "probe"]).unique(
        ["_claim", "key", "position"]
    )
    negations = tokens.filter(pl.col("word").is_in(NEGATIONS)).select(
        "_claim", "clause", pl.col("position").alias("negation")
    )
    distance = pl.col("position") - pl.col("negation")
    negated = (
        mentions.join(negations, on=["_claim", "clause"], how="left")
        .with_columns(distance.is_between(1, _BEFORE).or_(distance.is_between(-_AFTER, -1))
                      .fill_null(False).alias("negated"))
        .group_by("_claim", "key", "polarity", "position", maintain_order=True)
        .agg(pl.col("negated").any())
    )
    polarity = pl.col("polarity")
    contradicted = negated.filter(
        (polarity == "unk") | ((polarity == "neg") & ~pl.col("negated"))
        | ((polarity == "pos") & pl.col("negated"))
    )
    if contradicted.is_empty():
        return empty
    value = polarity.replace_strict({"pos": "True", "neg": "False", "unk": "unknown"})
    return contradicted.group_by("_claim", maintain_order=True).agg(
        pl.format('"{}" is {} in the record', pl.col("key"), value)
        .unique().sort().alias("conflicts")
    ).with_columns(pl.col("_claim").cast(pl.Int64))
