-- grain: one row per (model_a, model_b, slice, noise_level, category, question_type, task, metric) plus the other columns of --by slices
-- Paired comparison of every two models on the questions both answered (rows paired on id, run,
-- noise_level and task), per metric and slice: all rows (slice 'all'), each noise level,
-- category and RGB task, and each requested slice (`rag-eval stats --by`, its columns joined
-- by commas). Each slice column keeps its type and is null where the row's slice does not use
-- it. Means, diff = mean_a - mean_b with its paired bootstrap 95% interval, the p-value (exact
-- McNemar for 0/1 metrics, on n_a_only / n_b_only: pairs where only model a / only model b
-- scored 1; paired permutation otherwise) and the Holm-adjusted p-value across the default
-- slices of one (model_a, model_b, metric), or across the rows of one requested slice. Staging
-- view over comparisons.parquet; empty while the file is absent. comparisons_file() is a table
-- macro that pipeline/views.py defines.
with comparisons_source as (
    select * from comparisons_file()
),

contract as (
    select
        cast(null as varchar) as model_a,
        cast(null as varchar) as model_b,
        cast(null as varchar) as slice,
        cast(null as double) as noise_level,
        cast(null as varchar) as category,
        cast(null as varchar) as question_type,
        cast(null as varchar) as task,
        cast(null as varchar) as metric,
        cast(null as bigint) as n_pairs,
        cast(null as double) as mean_a,
        cast(null as double) as mean_b,
        cast(null as double) as diff,
        cast(null as double) as ci_low,
        cast(null as double) as ci_high,
        cast(null as varchar) as test,
        cast(null as bigint) as n_a_only,
        cast(null as bigint) as n_b_only,
        cast(null as double) as p_value,
        cast(null as double) as p_adjusted,
        cast(null as varchar) as correction,
        cast(null as boolean) as significant,
        cast(null as bigint) as resamples,
        cast(null as bigint) as seed
    where false
),

final as (
    select * from contract
    union all by name
    select * from comparisons_source
)

select * from final
