-- grain: one row per (eval_run, source, row_number), i.e. one scored input row of a run
-- The texts behind each scored row with its key and identifying columns: the question,
-- reference and response, and the passages the model was given (`contexts`, in the order its
-- [n] citations number them; contexts[1] is passage 1). Join it with the scores on the row:
-- `from scores s join texts t using (source, row_number)` (with `--run all` on a store, add
-- eval_run). After the passages come the inputs' other columns that the run kept (a user's
-- `label`), to slice the scores by: `select t.label, avg(s.answer_f1) from scores s join texts t
-- using (source, row_number) group by 1`.
with scored as (
    select * from scores
),

stored as (
    select * from stored_texts
),

final as (
    select
        sc.eval_run,
        sc.source,
        sc.row_number,
        sc.id,
        sc.model,
        sc.run,
        sc.category,
        sc.noise_level,
        sc.question_type,
        sc.task,
        sc.lang,
        st.* exclude (eval_run, source, row_number, id)
    from scored as sc
    inner join stored as st
        on
            st.source = sc.source
            and st.row_number = sc.row_number
            and st.eval_run is not distinct from sc.eval_run
)

select * from final
