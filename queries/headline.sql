-- grain: one row per model
-- The primary results table, its most important columns first: answer F1, faithfulness and overlap (grounding in the cited passages) with
-- their N, answer F1, citation F1 (macro: mean of per-row F1), cost, latency and abstain rate.
-- `n_grounding` counts the rows faithfulness and overlap average over: rows without any passage
-- are not applicable (null) and counted in `n_no_passages` (under the core-rag preset they score
-- 0.0 and 0.6 and are in n_grounding too). `n_idk_with_citation` counts rows where a sentence
-- says "I don't know" and cites a passage: it must be 0, and `idk_check` says WARNING otherwise.
-- `abstention_accuracy` is the share of unanswerable questions (`n_unanswerable`, null when the
-- run has none) that the model declined; `empty_response_rate` the share of empty responses (null
-- when there are none). Faithfulness is the share of a response's claims its passages support
-- (docs/grounding.md); under the core-rag preset it is the proxy 0.6 + 0.4 overlap, whose 0.6
-- baseline an answer with no supported sentence still scores, so read it beside overlap.
-- `overall_score` is the overall composite (null when the composites did not run).
-- Retrieval (docs/retrieval.md), null when the run has no such inputs: `answer_in_context` (rows
-- where a passage holds an answer) and, with relevance judgments, trec_eval's `recall_at_5` and
-- `reciprocal_rank` (MRR); the other retrieval and context metrics and `answer_str_em` are in
-- by_model (and the report's appendix).
-- EM is in the appendix view headline_em, lexical and semantic scores in by_model. The signature
-- says which configuration and version produced the numbers; compare rows only when it matches.
with models as (
    select * from by_model
),

final as (
    select
        bm.model,
        bm.n,
        bm.answer_f1,
        bm.faithfulness,
        bm.overlap,
        bm.citation_f1_macro,
        bm.abstain_rate,
        bm.abstention_accuracy,
        case when bm.n_unanswerable > 0 then bm.n_unanswerable end as n_unanswerable,
        bm.overall_score,
        bm.p50_latency_ms,
        bm.mean_total_tokens,
        case when bm.empty_response > 0 then bm.empty_response end as empty_response_rate,
        bm.n_grounding,
        bm.n_no_passages,
        bm.n_idk_with_citation,
        case
            when bm.n_idk_with_citation > 0 then 'WARNING: IDK+citation must be 0'
            when bm.n_idk_with_citation = 0 then 'ok'
        end as idk_check,
        bm.answer_in_context,
        bm.recall_at_5,
        bm.reciprocal_rank,
        bm.signature
    from models as bm
)

select * from final
