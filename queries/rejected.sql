-- grain: one row per (source, row_number), i.e. one input row that was not scored
-- Staging view over rejected.parquet; with scores.sql the only SQL that reads a file.
with rejected_file as (
    select * from read_parquet(eval_data_dir() || '/rejected.parquet')
),

final as (
    select
        cast(rf.source as varchar) as source,
        cast(rf.row_number as bigint) as row_number,
        cast(rf.id as varchar) as id,
        cast(rf.reason as varchar) as reason,
        cast(rf.raw as varchar) as raw
    from rejected_file as rf
)

select * from final
