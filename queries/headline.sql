-- grain: one row per model
-- The primary results table: answer F1, citation F1 (macro: mean of per-row F1), abstain rate,
-- cost and latency. EM is in the appendix view headline_em. The signature says which
-- configuration and version produced the numbers; compare rows only when it matches.
with models as (
    select * from by_model
),

final as (
    select
        bm.model,
        bm.n,
        bm.answer_f1,
        bm.citation_f1_macro,
        bm.abstain_rate,
        bm.mean_total_tokens,
        bm.p50_latency_ms,
        bm.signature
    from models as bm
)

select * from final
