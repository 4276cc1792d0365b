-- grain: one row per (source, reason)
-- How many input rows each file lost and why, with the first such row to look at.
with rejected_rows as (
    select * from rejected
),

final as (
    select
        rr.source,
        rr.reason,
        count(*) as n_rows,
        min(rr.row_number) as first_row_number,
        arg_min(rr.id, rr.row_number) as first_id
    from rejected_rows as rr
    group by rr.source, rr.reason
)

select * from final
