-- grain: one row per (slice, model, noise_level, category, question_type, task, metric) plus the other columns of --by slices
-- Staging view over intervals.parquet (written by `rag-eval stats` and by evaluate): the mean of
-- every metric per model over a slice of the rows, with its 95% percentile bootstrap interval
-- (questions resampled) and, for 0/1 metrics, the Wilson score interval. `slice` names the
-- slice: 'all' (the rows of by_model), 'noise_level' (by_model_noise), 'category'
-- (by_model_category), or the columns of a requested slice joined by commas
-- ('question_type,noise_level'). Each slice column keeps its type (noise_level is a double)
-- and is null where the row's slice does not use it. Metrics carry the names of the view
-- columns that are their means (abstain_rate, citation_f1_macro, mean_total_tokens, ...).
-- Empty while the file is absent. intervals_file() is a table macro that pipeline/views.py
-- defines.
with intervals_source as (
    select * from intervals_file()
),

contract as (
    select
        cast(null as varchar) as slice,
        cast(null as varchar) as model,
        cast(null as double) as noise_level,
        cast(null as varchar) as category,
        cast(null as varchar) as question_type,
        cast(null as varchar) as task,
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
