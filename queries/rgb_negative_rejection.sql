-- grain: one row per model
-- RGB negative rejection (Chen et al., AAAI 2024): the share (%) of negative_rejection rows,
-- whose passages all lack the answer, on which the model declines to answer.
with scored_rows as (
    select * from scores
),

rejection_rows as (
    select
        sr.model,
        sr.rejected,
        sr.signature
    from scored_rows as sr
    where sr.task = 'negative_rejection'
),

final as (
    select
        rr.model,
        count(rr.rejected) as n,
        100.0 * avg(rr.rejected) as rejection_rate,
        count(*) filter (where rr.rejected = 1) as n_rejected,
        string_agg(distinct rr.signature, '; ' order by rr.signature) as signature
    from rejection_rows as rr
    group by rr.model
)

select * from final
