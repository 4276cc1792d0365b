-- grain: one row per (eval_run, source, row_number), i.e. one scored input row of a run
-- Staging view over the texts of the scored rows: the question, reference and response, and the
-- passages the model was given (`contexts`). texts_file() is a table macro that pipeline/views.py
-- defines (texts.parquet of an output directory, the texts of the chosen run of a store). The
-- view `texts` joins them to the scores' identifying columns. A run written before the texts
-- held their passages has null contexts. The contract's columns come first, then the inputs'
-- other columns that the run kept (a user's `label`; docs/input-formats.md, "Other columns"),
-- as texts.parquet holds them (their union over the runs read with `--run all`).
with text_rows as (
    select * from texts_file()
),

contract as (
    select
        cast(null as varchar) as eval_run,
        cast(null as varchar) as source,
        cast(null as bigint) as row_number,
        cast(null as varchar) as id,
        cast(null as varchar) as question,
        cast(null as varchar) as reference,
        cast(null as varchar) as response,
        cast(null as varchar[]) as contexts
    where false
),

final as (
    select ct.*
    from (select * from contract union all by name select * from text_rows) as ct
)

select * from final
