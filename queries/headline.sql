-- grain: one row per model
-- The primary results table: faithfulness and overlap (grounding in the cited passages), answer
-- F1, citation F1 (macro: mean of per-row F1), cost, latency and abstain rate. EM is in the
-- appendix view headline_em, lexical and semantic scores in by_model. The signature says which
-- configuration and version produced the numbers; compare rows only when it matches.
with models as (
    select * from by_model
),

final as (
    select
        bm.model,
        bm.n,
        bm.faithfulness,
        bm.overlap,
        bm.answer_f1,
        bm.citation_f1_macro,
        bm.mean_total_tokens,
        bm.p50_latency_ms,
        bm.abstain_rate,
        bm.signature
    from models as bm
)

select * from final
