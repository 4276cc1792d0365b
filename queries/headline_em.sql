-- grain: one row per model
-- Appendix to headline: SQuAD-normalized exact match and strict (case/whitespace-only) exact match.
with models as (
    select * from by_model
),

final as (
    select
        bm.model,
        bm.n,
        bm.answer_em,
        bm.answer_em_strict,
        bm.signature
    from models as bm
)

select * from final
