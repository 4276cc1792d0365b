-- grain: one row per model
-- RGB counterfactual robustness (Chen et al., AAAI 2024), over the counterfactual_robustness rows,
-- whose passages state a false answer: accuracy (%), error detection rate (% of rows that flag the
-- false passages) and error correction rate (% of rows that flag them and answer correctly).
-- correction_rate_given_detected is the paper's CR: corrected rows among the detected ones,
-- null when the model detected nothing.
with scored_rows as (
    select * from scores
),

counterfactual_rows as (
    select
        sr.model,
        sr.rgb_correct,
        sr.error_detected,
        sr.error_corrected,
        sr.signature
    from scored_rows as sr
    where sr.task = 'counterfactual_robustness'
),

final as (
    select
        cr.model,
        count(cr.rgb_correct) as n,
        100.0 * avg(cr.rgb_correct) as accuracy,
        100.0 * avg(cr.error_detected) as error_detection_rate,
        100.0 * avg(cr.error_corrected) as error_correction_rate,
        count(*) filter (where cr.error_detected = 1) as n_error_detected,
        100.0 * count(*) filter (where cr.error_detected = 1 and cr.error_corrected = 1)
            / nullif(count(*) filter (where cr.error_detected = 1), 0)
            as correction_rate_given_detected,
        string_agg(distinct cr.signature, '; ' order by cr.signature) as signature
    from counterfactual_rows as cr
    group by cr.model
)

select * from final
