-- grain: one row per (eval_run, source, row_number), i.e. one scored input row of a run
-- Staging view over the texts of the scored rows: the question, reference and response, and the
-- passages the model was given (`contexts`, in the order its [n] citations number them), with
-- the row's key and identifying columns. texts_file() is a table macro that pipeline/views.py
-- defines (texts.parquet of an output directory, the texts of the chosen run of a store).
-- Join it with the scores on the row: `from scores s join texts t using (source, row_number)`
-- (with `--run all` on a store, add eval_run). A run written before the texts held their
-- passages has null contexts and identifying columns here; the scores have them.
with text_rows as (
    select * from texts_file()
),

contract as (
    select
        cast(null as varchar) as eval_run,
        cast(null as varchar) as source,
        cast(null as bigint) as row_number,
        cast(null as varchar) as id,
        cast(null as varchar) as model,
        cast(null as varchar) as run,
        cast(null as varchar) as category,
        cast(null as double) as noise_level,
        cast(null as varchar) as question_type,
        cast(null as varchar) as task,
        cast(null as varchar) as question,
        cast(null as varchar) as reference,
        cast(null as varchar) as response,
        cast(null as varchar[]) as contexts
    where false
),

final as (
    select
        ct.eval_run,
        ct.source,
        ct.row_number,
        ct.id,
        ct.model,
        ct.run,
        ct.category,
        ct.noise_level,
        ct.question_type,
        ct.task,
        ct.question,
        ct.reference,
        ct.response,
        ct.contexts
    from (select * from contract union all by name select * from text_rows) as ct
)

select * from final
