-- grain: one row per (model, noise_level, category, failure_stage)
-- Where answers fail (docs/retrieval.md): how many rows of each (model, noise level, category)
-- failed at each stage (retrieval, generation, grounding, abstention, correct_abstention,
-- none) and their share of the group's rows; the shares of a group add up to 1. Rows scored
-- without the stage (runs before it, or metrics that leave it out) are not counted.
with scored_rows as (
    select * from scores
    where failure_stage is not null
),

counted as (
    select
        sr.model,
        sr.noise_level,
        sr.category,
        sr.failure_stage,
        count(*) as n
    from scored_rows as sr
    group by sr.model, sr.noise_level, sr.category, sr.failure_stage
),

final as (
    select
        co.model,
        co.noise_level,
        co.category,
        co.failure_stage,
        co.n,
        co.n / sum(co.n) over (partition by co.model, co.noise_level, co.category) as share
    from counted as co
)

select * from final
