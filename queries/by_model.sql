-- grain: one row per model
-- Quality, citation (macro and micro), abstention and usage aggregates; the columns are defined
-- once in metrics_by_slice.sql.
with slices as (
    select * from metrics_by_slice
),

final as (
    select sl.* exclude (slice, noise_level, category, question_type)
    from slices as sl
    where sl.slice = 'model'
)

select * from final
