-- grain: one row per (model, noise_level)
-- RGB information integration (Chen et al., AAAI 2024): accuracy (%) on questions whose answer
-- must be assembled from several passages, at each noise rate.
with scored_rows as (
    select * from scores
),

integration_rows as (
    select
        sr.model,
        sr.noise_level,
        sr.rgb_correct,
        sr.signature
    from scored_rows as sr
    where sr.task = 'information_integration'
),

final as (
    select
        ir.model,
        ir.noise_level,
        count(ir.rgb_correct) as n,
        100.0 * avg(ir.rgb_correct) as accuracy,
        string_agg(distinct ir.signature, '; ' order by ir.signature) as signature
    from integration_rows as ir
    group by ir.model, ir.noise_level
)

select * from final
