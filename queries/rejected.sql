-- grain: one row per (eval_run, source, row_number), i.e. one input row of a run not scored
-- Staging view over the rejected rows; with scores.sql the only SQL that reads scores or
-- rejections. rejected_file() is a table macro that pipeline/views.py defines (see scores.sql).
with rejected_rows as (
    select * from rejected_file()
),

final as (
    select
        cast(rf.eval_run as varchar) as eval_run,
        cast(rf.source as varchar) as source,
        cast(rf.row_number as bigint) as row_number,
        cast(rf.id as varchar) as id,
        cast(rf.reason as varchar) as reason,
        cast(rf.raw as varchar) as raw
    from rejected_rows as rf
)

select * from final
