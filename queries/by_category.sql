-- grain: one row per (model, scoring_category)
-- The category-aware composites per model and scoring category (the canonical category the
-- weights came from; unknown categories fall back to the default and are counted): means of the
-- four composites and the overall score, and the pass rate of each area and overall.
with scored_rows as (
    select * from scores
),

final as (
    select
        sr.model,
        sr.scoring_category,
        count(*) as n,
        count(*) filter (where sr.category_known = 0) as n_category_fallback,
        avg(sr.composite_accuracy) as composite_accuracy,
        avg(sr.composite_relevance) as composite_relevance,
        avg(sr.safety_score) as safety_score,
        avg(sr.composite_quality) as composite_quality,
        avg(sr.overall_score) as overall_score,
        avg(sr.passed_accuracy) as pass_rate_accuracy,
        avg(sr.passed_relevance) as pass_rate_relevance,
        avg(sr.passed_safety) as pass_rate_safety,
        avg(sr.passed_quality) as pass_rate_quality,
        -- a pass: the failure mode is 'pass' or a passing mode such as 'correct_abstention'
        -- (passed_overall; runs written before it had only 'pass')
        avg(coalesce(
            sr.passed_overall, case when sr.primary_failure_mode = 'pass' then 1 else 0 end
        )) filter (where sr.primary_failure_mode is not null) as pass_rate_overall,
        avg(sr.is_refusal) as refusal_rate,
        avg(sr.has_bias_risk) as bias_risk_rate
    from scored_rows as sr
    group by sr.model, sr.scoring_category
)

select * from final
