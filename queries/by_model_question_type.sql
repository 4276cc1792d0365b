-- grain: one row per (model, question_type)
-- The columns of by_model per model and question type (fact, multi-hop, impossible, ...); the
-- columns are defined once in metrics_by_slice.sql. A null question_type is a group of its own.
-- `rag-eval stats DIR --by question_type` writes their intervals (intervals view, slice
-- 'question_type').
with slices as (
    select * from metrics_by_slice
),

final as (
    select sl.* exclude (slice, noise_level, category)
    from slices as sl
    where sl.slice = 'model_question_type'
)

select * from final
