-- grain: one row per (view, model, noise_level, category, metric)
-- Staging view over intervals.parquet (written by `rag-eval stats` and by evaluate): the mean of
-- every metric per model (view 'by_model'), model x noise level ('by_model_noise') and model x
-- category ('by_model_category'), with its 95% percentile bootstrap interval (questions
-- resampled) and, for 0/1 metrics, the Wilson score interval. Empty while the file is absent.
-- intervals_file() is a table macro that pipeline/views.py defines.
with intervals_source as (
    select * from intervals_file()
),

contract as (
    select
        cast(null as varchar) as view,
        cast(null as varchar) as model,
        cast(null as double) as noise_level,
        cast(null as varchar) as category,
        cast(null as varchar) as metric,
        cast(null as bigint) as n,
        cast(null as double) as mean,
        cast(null as double) as ci_low,
        cast(null as double) as ci_high,
        cast(null as double) as wilson_low,
        cast(null as double) as wilson_high,
        cast(null as bigint) as resamples,
        cast(null as bigint) as seed,
        cast(null as varchar) as method
    where false
),

final as (
    select * from contract
    union all by name
    select * from intervals_source
)

select * from final
