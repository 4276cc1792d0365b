-- grain: one row per (model, scoring_category, primary_failure_mode)
-- How often each primary failure mode occurs per model and category, and its share of the
-- (model, category) rows; 'pass' is a mode too, so the shares of a group add up to 1.
with scored_rows as (
    select * from scores
),

counted as (
    select
        sr.model,
        sr.scoring_category,
        sr.primary_failure_mode,
        count(*) as n
    from scored_rows as sr
    group by sr.model, sr.scoring_category, sr.primary_failure_mode
),

final as (
    select
        co.model,
        co.scoring_category,
        co.primary_failure_mode,
        co.n,
        co.n / sum(co.n) over (partition by co.model, co.scoring_category) as share
    from counted as co
)

select * from final
