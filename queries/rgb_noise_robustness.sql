-- grain: one row per (model, noise_level)
-- RGB noise robustness (Chen et al., "Benchmarking Large Language Models in Retrieval-Augmented
-- Generation", AAAI 2024): accuracy (%) of the noise_robustness rows at each noise rate, and the
-- model's degradation curve repeated on each of its rows.
-- The curve is over the model's levels with a known noise_level and at least one scored row.
-- accuracy_drop is accuracy at the lowest level minus accuracy at the highest (percentage
-- points); auc is the trapezoidal area under accuracy (%) against noise_level (a fraction), and
-- auc_normalized divides it by the width of the range, i.e. the mean accuracy over the range.
-- All three are null with fewer than two levels: a single point has no slope and no area.
with scored_rows as (
    select * from scores
),

noise_rows as (
    select
        sr.model,
        sr.noise_level,
        sr.rgb_correct,
        sr.signature
    from scored_rows as sr
    where sr.task = 'noise_robustness'
),

by_level as (
    select
        nr.model,
        nr.noise_level,
        count(nr.rgb_correct) as n,
        100.0 * avg(nr.rgb_correct) as accuracy
    from noise_rows as nr
    group by nr.model, nr.noise_level
),

curve_points as (
    select
        bl.model,
        bl.noise_level,
        bl.accuracy,
        lag(bl.noise_level) over by_noise as previous_noise_level,
        lag(bl.accuracy) over by_noise as previous_accuracy
    from by_level as bl
    where bl.noise_level is not null and bl.accuracy is not null
    window by_noise as (partition by bl.model order by bl.noise_level)
),

curves as (
    select
        cp.model,
        min(cp.noise_level) as min_noise_level,
        max(cp.noise_level) as max_noise_level,
        arg_min(cp.accuracy, cp.noise_level) as accuracy_at_min_noise,
        arg_max(cp.accuracy, cp.noise_level) as accuracy_at_max_noise,
        sum(
            (cp.noise_level - cp.previous_noise_level)
            * (cp.accuracy + cp.previous_accuracy) / 2
        ) as auc
    from curve_points as cp
    group by cp.model
),

signatures as (
    select
        nr.model,
        string_agg(distinct nr.signature, '; ' order by nr.signature) as signature
    from noise_rows as nr
    group by nr.model
),

final as (
    select
        bl.model,
        bl.noise_level,
        bl.n,
        bl.accuracy,
        cu.accuracy_at_min_noise,
        cu.accuracy_at_max_noise,
        case
            when cu.max_noise_level > cu.min_noise_level
                then cu.accuracy_at_min_noise - cu.accuracy_at_max_noise
        end as accuracy_drop,
        case when cu.max_noise_level > cu.min_noise_level then cu.auc end as auc,
        case
            when cu.max_noise_level > cu.min_noise_level
                then cu.auc / (cu.max_noise_level - cu.min_noise_level)
        end as auc_normalized,
        sg.signature
    from by_level as bl
    left join curves as cu on cu.model is not distinct from bl.model
    left join signatures as sg on sg.model is not distinct from bl.model
)

select * from final
