"""The worst items section: the rows with the lowest scores per model with their question,
reference and response (cut to :attr:`~pipeline.report.limits.Limits.text_chars`), and which
response sentences grounding found unsupported, as far as the stored counts tell
(:func:`unsupported_sentences`: the response split again as grounding splits it, the rules
of :mod:`pipeline.metrics.embedding.grounding` that need no passage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.config import DEFAULT_ABSTENTION_PHRASES
from pipeline.metrics.qa.abstention import fold, fold_phrases
from pipeline.metrics.qa.citation import parse_citation_markers
from pipeline.report.data import WORST_N, RunData
from pipeline.report.limits import (
    MAX_TEXT_CHARS,
)
from pipeline.report.markup import (
    Column,
    _noise_text,
    _search_box,
    _section,
    _table,
    _td,
    esc,
    esc_cut,
    fmt,
)
from pipeline.text.sentences import split_sentences

WORST_SCORES = (
    Column("answer_f1", "F1"),
    Column("answer_em", "EM"),
    Column("citation_f1", "Citation F1"),
    Column("faithfulness", "Faith&shy;fulness"),
    Column("overall_score", "Overall"),
)


def unsupported_sentences(
    frame: pl.DataFrame, abstention_phrases: Sequence[str] = DEFAULT_ABSTENTION_PHRASES
) -> pl.DataFrame:
    """Which response sentences grounding found unsupported, as far as the stored data tells.

    ``frame`` has ``response``, ``n_sentences`` and ``n_supported`` and, optionally,
    ``n_contexts`` (from ``scores``). The run stores only the counts, not which sentences were
    supported, nor the contexts. So the response is split again with the splitter grounding
    uses (:func:`pipeline.text.sentences.split_sentences`), and the sentences that fail a rule
    checkable without the passages are named (:mod:`pipeline.metrics.embedding.grounding`,
    rules 1 and 2): ``no citation``, ``cites several passages``, ``cites a passage that was not
    retrieved`` (a number beyond ``n_contexts``, where known) or ``abstains`` (the default
    abstention phrases). The other unsupported sentences cite one passage that did not support
    them (cosine below ``tau_sim``); they are named only when every cited sentence failed
    (``n_supported == 0``), else only counted.

    Adds ``n_unsupported`` (null without grounding), ``unsupported_sentence`` and
    ``unsupported_reason`` (the first named one), ``unsupported_more`` (further named ones),
    ``unsupported_unnamed`` (unsupported sentences that cannot be told apart) and
    ``unsupported_unnamed_cited`` (those are known to be cited sentences: the split matches
    the stored count and names no more sentences than failed).

    Runs that store ``first_unsupported`` (the grounding metric) name that sentence exactly:
    it replaces the guess when no rule named a sentence, with the reason the rules give it or
    ``not supported by the passage it cites``.

    >>> frame = pl.DataFrame({"response": ["Paris is in France [1]. It is big. Rome [1]."],
    ...                       "n_sentences": [3], "n_supported": [1]})
    >>> unsupported_sentences(frame).select("unsupported_sentence", "unsupported_reason",
    ...                                     "unsupported_unnamed").row(0)
    ('It is big.', 'no citation', 1)
    """
    folded = fold_phrases(abstention_phrases)
    sentence, numbers = pl.col("_sentence"), parse_citation_markers(pl.col("_sentence"))
    passages = pl.col("_n_contexts")
    reason = (
        pl.when(numbers.list.len() == 0).then(pl.lit("no citation"))
        .when(numbers.list.len() > 1).then(pl.lit("cites several passages"))
        .when(passages.is_not_null() & ~numbers.list.first().is_between(1, passages))
        .then(pl.lit("cites a passage that was not retrieved"))
        .when(fold(sentence).str.contains_any(folded)).then(pl.lit("abstains"))
    )
    known_passages = (pl.col("n_contexts").cast(pl.Int64) if "n_contexts" in frame.columns
                      else pl.lit(None, pl.Int64))
    sentences = frame.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        split_sentences(pl.col("response")).list.drop_nulls().alias("_sentence"),
        known_passages.alias("_n_contexts"),
        pl.col("n_sentences").alias("_total"),
    ).with_columns(pl.col("_sentence").list.len().fill_null(0).alias("_split"))
    # A sentence is named only where the split agrees with the stored count (``trusted``
    # below), so the rules run on those rows' sentences alone: a long response that was
    # split otherwise is counted, not checked sentence by sentence.
    checked = (
        sentences.filter(pl.col("_split") == pl.col("_total"))
        .explode("_sentence")
        .drop_nulls("_sentence")
        .with_columns(reason.alias("_reason"))
        .group_by("_row", maintain_order=True)
        .agg(
            sentence.filter(pl.col("_reason").is_not_null()).alias("_named"),
            pl.col("_reason").drop_nulls().alias("_reasons"),
            sentence.first().alias("_first"),
            pl.col("_reason").first().alias("_first_reason"),
        )
    )
    rows = (
        frame.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"))
        .join(sentences.select("_row", "_split"), on="_row", how="left", maintain_order="left")
        .join(checked, on="_row", how="left", maintain_order="left")
    )
    total, supported = pl.col("n_sentences"), pl.col("n_supported")
    unsupported = total - supported
    if "first_unsupported" in frame.columns:  # stored by grounding: exact, not a guess
        stored = pl.col("first_unsupported")
        rows = rows.with_columns(
            pl.when(stored.is_not_null() & (pl.col("_named").list.len().fill_null(0) == 0))
            .then(pl.concat_list(stored)).otherwise(pl.col("_named")).alias("_named"),
            pl.when(stored.is_not_null() & (pl.col("_named").list.len().fill_null(0) == 0))
            .then(pl.concat_list(pl.lit("not supported by the passage it cites")))
            .otherwise(pl.col("_reasons")).alias("_reasons"),
        )
    named = pl.col("_named").list.len().fill_null(0)
    trusted = pl.col("_split").fill_null(0) == total  # the split agrees with the stored count
    exact = trusted & (named == unsupported)
    everything = trusted & (supported == 0) & (unsupported > 0)
    partial = trusted & (named < unsupported) & (named > 0)
    return rows.select(
        pl.exclude("_row", "_split", "_named", "_reasons", "_first", "_first_reason"),
        unsupported.alias("n_unsupported"),
        pl.when(everything).then(pl.col("_first"))
        .when(exact | partial).then(pl.col("_named").list.first())
        .alias("unsupported_sentence"),
        pl.when(everything).then(pl.coalesce(pl.col("_first_reason"),
                                             pl.lit("not supported by the passage it cites")))
        .when(exact | partial).then(pl.col("_reasons").list.first())
        .alias("unsupported_reason"),
        pl.when(everything).then(unsupported - 1)
        .when(exact | partial).then(named - 1)
        .otherwise(0).alias("unsupported_more"),
        pl.when(everything | exact).then(0)
        .when(partial).then(unsupported - named)
        .otherwise(unsupported).alias("unsupported_unnamed"),
        (trusted & (named <= unsupported)).alias("unsupported_unnamed_cited"),
    )


def _unsupported_text(r: Mapping[str, object], limit: int = MAX_TEXT_CHARS) -> str:
    """What the worst-items table says about the unsupported sentences of a row ("" if none);
    the sentence cut after ``limit`` characters."""
    total, missing = r.get("n_sentences"), r.get("n_unsupported")
    if total is None or missing is None or missing == 0:
        return ""
    if r.get("n_contexts") == 0:
        return "no passage was retrieved: grounding does not apply"
    noun = "sentence" if total == 1 else "sentences"
    parts = [f"{fmt(missing, 'count')} of {fmt(total, 'count')} {noun} unsupported:"]
    if r["unsupported_sentence"] is not None:
        parts.append(f"<q>{esc_cut(r['unsupported_sentence'], limit)}</q> "
                     f'<span class="sub">({esc(r["unsupported_reason"])})</span>')
        if r["unsupported_more"]:
            parts.append(f'<span class="sub">and {fmt(r["unsupported_more"], "count")} '
                         "more</span>")
    unnamed = r["unsupported_unnamed"]
    if unnamed:
        what = ("not supported by the passage cited" if r["unsupported_unnamed_cited"]
                else "not identified")
        parts.append(f'<span class="sub">{fmt(unnamed, "count")} '
                     f'{"sentence" if unnamed == 1 else "sentences"} {what} (which ones is '
                     "not stored)</span>")
    return " ".join(parts)


#: What the worst-items table shows for a response that says nothing (``empty_response``).
EMPTY_RESPONSE = '<span class="sub">(empty response)</span>'


def _text_html(r: Mapping[str, object], column: str, limit: int = MAX_TEXT_CHARS) -> str:
    """The escaped text of ``column``, cut after ``limit`` characters (:func:`esc_cut`); a
    response that says nothing (null, blank, or citation markers only: ``empty_response``) is
    shown as "(empty response)", after its markers if any."""
    text = r[column] if r[column] is not None else ""
    if column != "response":
        return esc_cut(text, limit)
    empty = r.get("empty_response")
    if empty == 1 or (empty is None and not str(text).strip()):
        return f"{esc_cut(text, limit)} {EMPTY_RESPONSE}" if str(text).strip() else EMPTY_RESPONSE
    return esc_cut(text, limit)


def _texts_cell(r: Mapping[str, object], texts: Sequence[str], limit: int) -> str:
    labels = {"question": "Q", "reference": "Reference", "response": "Response"}
    blocks = [
        f'<p><span class="lbl">{labels[c]}</span>{_text_html(r, c, limit)}</p>'
        for c in texts
    ]
    unsupported = _unsupported_text(r, limit)
    if unsupported:
        blocks.append(f'<p class="claim"><span class="lbl">Unsupported</span>{unsupported}</p>')
    return f'<div class="text">{"".join(blocks)}</div>'


def _worst(data: RunData, limit: int = MAX_TEXT_CHARS) -> str:
    """The worst-items table; every text cut after ``limit`` characters (:func:`esc_cut`)."""
    frame = data.worst
    if frame.height == 0:
        return _section("worst", "Worst items", '<p class="empty">No scored rows.</p>')
    texts = [c for c in ("question", "reference", "response") if c in frame.columns]
    grounding = "response" in frame.columns and "n_sentences" in frame.columns
    if grounding:
        frame = unsupported_sentences(frame)
    rows = []
    for r in frame.to_dicts():
        category = esc_cut(r["category"], limit)
        if r.get("task") is not None:
            category += f'<br><span class="sub">{esc_cut(r["task"], limit)}</span>'
        cells = [_td(esc(r["model"])), _td(fmt(r["worst_rank"], "count"), True),
                 _td(esc_cut(r["id"], limit), css="wrap"),
                 _td(_noise_text(r.get("noise_level")), True), _td(category, css="wrap")]
        cells += [_td(fmt(r[c.name], c.kind), True) for c in WORST_SCORES]
        cells.append(_td(esc(r["primary_failure_mode"]).replace("_", "_<wbr>")))
        if texts:
            cells.append(_td(_texts_cell(r, texts, limit)))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    text_title = " · ".join([*texts, *(["unsupported sentence"] if grounding else [])])
    text_title = text_title[:1].upper() + text_title[1:]
    headers = ["Model", "#", "ID", "Noise", "Category", *(c.title for c in WORST_SCORES),
               "Failure mode", *([text_title] if texts else [])]
    numeric = [False, True, False, True, False, *([True] * len(WORST_SCORES)), False,
               *([False] if texts else [])]
    missing = "" if texts else (" texts.parquet is missing, so the texts are not shown.")
    search = _search_box("worst-table", "worst-count", "Search questions, answers, models…")
    return _section("worst", "Worst items per model", search + _table(
        headers, rows, numeric=numeric, table_id="worst-table",
        key=("Model", "Noise", "Category", "F1"))
        + f'<p class="note">The {WORST_N} rows with the lowest answer F1 per model (ties: lowest '
        "overall score). Category shows the task of RGB rows beneath. Unsupported: the "
        "response is split as grounding splits it; sentences without exactly one citation, "
        "or that abstain, are named; a sentence that cites one passage but was not supported "
        "by it is named only when no sentence was supported (the run stores the counts, not "
        "which sentence failed the similarity test). A text longer than "
        f"{fmt(limit, 'count')} characters is cut, with a marker that counts the rest "
        f"(<code>Limits.text_chars</code>; texts.parquet has it whole).{missing}</p>")
