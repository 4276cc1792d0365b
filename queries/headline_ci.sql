-- grain: one row per model
-- The headline with 95% intervals: percentile bootstrap intervals (questions resampled) for the
-- means and the Wilson score interval for the abstain rate, from the intervals view (slice
-- 'all', metrics named as the headline's columns). The interval columns are null where
-- `rag-eval stats` has not run or ran with --resamples 0.
with headline_rows as (
    select * from headline
),

model_intervals as (
    select * from intervals
    where slice = 'all'
),

pivoted as (
    select
        mi.model,
        max(mi.ci_low) filter (where mi.metric = 'faithfulness') as faithfulness_low,
        max(mi.ci_high) filter (where mi.metric = 'faithfulness') as faithfulness_high,
        max(mi.ci_low) filter (where mi.metric = 'overlap') as overlap_low,
        max(mi.ci_high) filter (where mi.metric = 'overlap') as overlap_high,
        max(mi.ci_low) filter (where mi.metric = 'answer_f1') as answer_f1_low,
        max(mi.ci_high) filter (where mi.metric = 'answer_f1') as answer_f1_high,
        max(mi.ci_low) filter (where mi.metric = 'citation_f1_macro') as citation_f1_macro_low,
        max(mi.ci_high) filter (where mi.metric = 'citation_f1_macro') as citation_f1_macro_high,
        max(mi.ci_low) filter (where mi.metric = 'mean_total_tokens') as mean_total_tokens_low,
        max(mi.ci_high) filter (where mi.metric = 'mean_total_tokens') as mean_total_tokens_high,
        max(mi.wilson_low) filter (where mi.metric = 'abstain_rate') as abstain_rate_low,
        max(mi.wilson_high) filter (where mi.metric = 'abstain_rate') as abstain_rate_high
    from model_intervals as mi
    group by mi.model
),

final as (
    select
        hr.model,
        hr.n,
        hr.faithfulness,
        pv.faithfulness_low,
        pv.faithfulness_high,
        hr.overlap,
        pv.overlap_low,
        pv.overlap_high,
        hr.answer_f1,
        pv.answer_f1_low,
        pv.answer_f1_high,
        hr.citation_f1_macro,
        pv.citation_f1_macro_low,
        pv.citation_f1_macro_high,
        hr.mean_total_tokens,
        pv.mean_total_tokens_low,
        pv.mean_total_tokens_high,
        hr.p50_latency_ms,
        hr.abstain_rate,
        pv.abstain_rate_low,
        pv.abstain_rate_high,
        hr.signature
    from headline_rows as hr
    left join pivoted as pv on pv.model is not distinct from hr.model
)

select * from final
