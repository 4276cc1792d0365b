-- grain: one row per (model, suggestion)
-- The suggestions made for each model's answers, most frequent first (rank 1), with the share of
-- the model's rows that received each.
with scored_rows as (
    select * from scores
),

model_rows as (
    select sr.model, count(*) as n_rows
    from scored_rows as sr
    group by sr.model
),

suggested as (
    select sr.model, unnest(sr.suggestions) as suggestion
    from scored_rows as sr
),

counted as (
    select su.model, su.suggestion, count(*) as n
    from suggested as su
    group by su.model, su.suggestion
),

final as (
    select
        co.model,
        co.suggestion,
        co.n,
        co.n / mr.n_rows as share_of_rows,
        row_number() over (partition by co.model order by co.n desc, co.suggestion) as rank
    from counted as co
    join model_rows as mr on mr.model is not distinct from co.model
)

select * from final
