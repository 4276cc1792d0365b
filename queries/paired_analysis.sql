-- grain: one row per model
-- Paired analysis per model: grounding against correctness, and cost against abstention.
-- A row is "grounded" when overlap >= 0.5 (at least half of its sentences are supported by the
-- passage they cite; equivalently faithfulness >= 0.8) and "correct" when answer_f1 >= 0.5.
-- The two thresholds are set once, in the thresholds CTE, and returned as columns
-- (grounded_min_overlap, correct_min_answer_f1): the report's grounding chart draws them.
-- grounded_wrong: faithful to the retrieved context but wrong against the reference (a retrieval
-- or reference problem); ungrounded_correct: right without support (memorised or lucky).
-- Correlations are Pearson over rows where both values exist (null with fewer than 2 rows).
with scored_rows as (
    select * from scores
),

thresholds as (
    select
        cast(0.5 as double) as grounded_min_overlap,
        cast(0.5 as double) as correct_min_answer_f1
),

flagged as (
    select
        sr.model,
        sr.overlap,
        sr.faithfulness,
        sr.answer_f1,
        sr.answer_em,
        sr.abstained,
        sr.total_tokens,
        sr.latency_ms,
        th.grounded_min_overlap,
        th.correct_min_answer_f1,
        sr.overlap >= th.grounded_min_overlap as grounded,
        sr.answer_f1 >= th.correct_min_answer_f1 as correct
    from scored_rows as sr
    cross join thresholds as th
),

final as (
    select
        fl.model,
        count(*) as n,
        count(*) filter (where fl.grounded and fl.correct) as n_grounded_correct,
        count(*) filter (where fl.grounded and not fl.correct) as n_grounded_wrong,
        count(*) filter (where not fl.grounded and fl.correct) as n_ungrounded_correct,
        count(*) filter (where not fl.grounded and not fl.correct) as n_ungrounded_wrong,
        avg(case when fl.grounded and not fl.correct then 1.0 else 0.0 end)
            filter (where fl.grounded is not null and fl.correct is not null)
            as share_grounded_wrong,
        avg(case when not fl.grounded and fl.correct then 1.0 else 0.0 end)
            filter (where fl.grounded is not null and fl.correct is not null)
            as share_ungrounded_correct,
        corr(fl.faithfulness, fl.answer_f1) as corr_faithfulness_f1,
        corr(fl.overlap, fl.answer_f1) as corr_overlap_f1,
        corr(fl.overlap, fl.answer_em) as corr_overlap_em,
        avg(fl.abstained) as abstain_rate,
        avg(fl.total_tokens) filter (where fl.abstained = 1) as mean_tokens_abstained,
        avg(fl.total_tokens) filter (where fl.abstained = 0) as mean_tokens_answered,
        quantile_cont(fl.latency_ms, 0.5) filter (where fl.abstained = 1)
            as p50_latency_ms_abstained,
        quantile_cont(fl.latency_ms, 0.5) filter (where fl.abstained = 0)
            as p50_latency_ms_answered,
        corr(fl.total_tokens, fl.abstained) as corr_tokens_abstained,
        corr(fl.latency_ms, fl.abstained) as corr_latency_abstained,
        any_value(fl.grounded_min_overlap) as grounded_min_overlap,
        any_value(fl.correct_min_answer_f1) as correct_min_answer_f1
    from flagged as fl
    group by fl.model
)

select * from final
