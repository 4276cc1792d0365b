-- grain: one row per (eval_run, source, row_number), i.e. one scored input row of a run
-- Staging view over the scores; with rejected.sql the only SQL that reads scores or rejections.
-- scores_file() is a table macro that pipeline/views.py defines: scores.parquet of an output
-- directory (eval_run null), or the scores of the chosen run of a results store (eval_run set;
-- `SET VARIABLE eval_run = 'RUN'` picks one, 'all' every run, unset the latest).
with scored as (
    select * from scores_file()
),

-- Every column of the scores.parquet contract with its type and no rows. A run restricted with
-- --metrics lacks some metric columns; `union all by name` fills them with typed nulls, so every
-- view builds whatever subset was computed. Columns the contract does not know come after these.
-- The metric columns come from the registry: pipeline/views.py writes one
-- `cast(null as TYPE) as NAME,` line per registered metric after the `-- registry:` line.
contract as (
    select
        cast(null as varchar) as id,
        cast(null as varchar) as model,
        cast(null as varchar) as run,
        cast(null as varchar) as category,
        cast(null as double) as noise_level,
        cast(null as varchar) as question_type,
        cast(null as varchar) as task,
        cast(null as varchar) as language,
        cast(null as varchar) as lang,
        cast(null as varchar) as source,
        cast(null as bigint) as row_number,
        -- registry: contract (one typed null per registered metric, in registry order)
        cast(null as varchar) as signature,
        cast(null as blob) as row_hash,
        cast(null as varchar) as eval_run
    where false
),

final as (
    select * from contract
    union all by name
    select * from scored
)

select * from final
