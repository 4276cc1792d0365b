-- grain: one row per model
-- The RGB table a paper would print: one row per model with any RGB row (task not null), its
-- scores taken from the four rgb_* views; a column is null when the model has no rows of that
-- task (or of that noise rate). The noise columns compare round(noise_level * 100), pooling
-- levels that differ only by floating-point noise; integration_accuracy pools every noise rate.
with scored_rows as (
    select * from scores
),

noise_robustness as (
    select * from rgb_noise_robustness
),

negative_rejection as (
    select * from rgb_negative_rejection
),

information_integration as (
    select * from rgb_information_integration
),

counterfactual as (
    select * from rgb_counterfactual
),

rgb_models as (
    select
        sr.model,
        count(*) as n,
        string_agg(distinct sr.signature, '; ' order by sr.signature) as signature
    from scored_rows as sr
    where sr.task is not null
    group by sr.model
),

noise_by_percent as (
    select
        nrb.model,
        round(nrb.noise_level * 100) as noise_percent,
        sum(nrb.accuracy * nrb.n) / nullif(sum(nrb.n), 0) as accuracy
    from noise_robustness as nrb
    group by nrb.model, round(nrb.noise_level * 100)
),

noise_curves as (
    select
        nbp.model,
        max(nbp.accuracy) filter (where nbp.noise_percent = 0) as noise_acc_0,
        max(nbp.accuracy) filter (where nbp.noise_percent = 20) as noise_acc_20,
        max(nbp.accuracy) filter (where nbp.noise_percent = 40) as noise_acc_40,
        max(nbp.accuracy) filter (where nbp.noise_percent = 60) as noise_acc_60,
        max(nbp.accuracy) filter (where nbp.noise_percent = 80) as noise_acc_80
    from noise_by_percent as nbp
    group by nbp.model
),

noise_per_model as (
    select distinct
        nrb.model,
        nrb.accuracy_drop,
        nrb.auc_normalized
    from noise_robustness as nrb
),

integration as (
    select
        ii.model,
        sum(ii.accuracy * ii.n) / nullif(sum(ii.n), 0) as accuracy
    from information_integration as ii
    group by ii.model
),

final as (
    select
        rm.model,
        rm.n,
        nc.noise_acc_0,
        nc.noise_acc_20,
        nc.noise_acc_40,
        nc.noise_acc_60,
        nc.noise_acc_80,
        npm.accuracy_drop as noise_accuracy_drop,
        npm.auc_normalized as noise_auc_normalized,
        nrj.rejection_rate,
        ig.accuracy as integration_accuracy,
        cf.accuracy as counterfactual_accuracy,
        cf.error_detection_rate,
        cf.error_correction_rate,
        rm.signature
    from rgb_models as rm
    left join noise_curves as nc on nc.model is not distinct from rm.model
    left join noise_per_model as npm on npm.model is not distinct from rm.model
    left join negative_rejection as nrj on nrj.model is not distinct from rm.model
    left join integration as ig on ig.model is not distinct from rm.model
    left join counterfactual as cf on cf.model is not distinct from rm.model
)

select * from final
