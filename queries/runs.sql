-- grain: one row per eval_run
-- The committed runs of a results store, newest first, from their manifests (empty for a plain
-- output directory). Lists every run whatever the eval_run variable says. manifests_file() is a
-- table macro that pipeline/views.py defines.
with manifests as (
    select * from manifests_file()
),

contract as (
    select
        cast(null as varchar) as run_id,
        cast(null as varchar) as status,
        cast(null as varchar) as engine,
        cast(null as varchar) as started_at,
        cast(null as varchar) as finished_at,
        cast(null as varchar) as signature,
        cast(null as varchar) as reused_from,
        cast(null as bigint) as n_read,
        cast(null as bigint) as n_scored,
        cast(null as bigint) as n_reused,
        cast(null as bigint) as n_rejected
    where false
),

typed as (
    select * from contract
    union all by name
    select * from manifests
),

final as (
    select
        t.run_id as eval_run,
        t.status,
        t.engine,
        cast(t.started_at as timestamptz) as started_at,
        cast(t.finished_at as timestamptz) as finished_at,
        t.n_read,
        t.n_scored,
        t.n_reused,
        t.n_rejected,
        t.reused_from,
        t.signature
    from typed as t
    order by t.finished_at desc, t.run_id desc
)

select * from final
