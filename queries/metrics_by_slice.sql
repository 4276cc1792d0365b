-- grain: one row per (slice, model, noise_level, category)
-- The aggregates behind by_model, by_model_noise and by_model_category, defined once and computed
-- in one scan with grouping sets. `slice` names the grouping; the columns it does not group by
-- are null ('model': noise_level and category; 'model_noise': category; 'model_category':
-- noise_level), while a null in a grouped column is a real null key.
--
-- Means skip null rows (a metric that was not computed, or is undefined for the row).
-- Macro citation scores are means of the per-row scores; micro ones come from the summed
-- sufficient statistics with the per-row convention for a zero denominator: nothing predicted
-- scores precision 1.0 when nothing is gold either, else 0.0 (recall alike), and F1 is 0.0 when
-- precision and recall are both 0.
with scored_rows as (
    select * from scores
),

aggregated as (
    select
        case
            when grouping(sr.noise_level) = 0 then 'model_noise'
            when grouping(sr.category) = 0 then 'model_category'
            else 'model'
        end as slice,
        sr.model as model,
        sr.noise_level as noise_level,
        sr.category as category,
        count(*) as n,
        avg(sr.answer_em) as answer_em,
        avg(sr.answer_f1) as answer_f1,
        avg(sr.answer_em_strict) as answer_em_strict,
        avg(sr.citation_precision) as citation_precision_macro,
        avg(sr.citation_recall) as citation_recall_macro,
        avg(sr.citation_f1) as citation_f1_macro,
        count(sr.citation_n_gold) as n_citation_scored,
        cast(sum(sr.citation_n_pred) as bigint) as citation_n_pred,
        cast(sum(sr.citation_n_gold) as bigint) as citation_n_gold,
        cast(sum(sr.citation_n_correct) as bigint) as citation_n_correct,
        avg(sr.abstained) as abstain_rate,
        avg(sr.abstention_correct) as abstention_accuracy,
        count(sr.abstention_correct) as n_unanswerable,
        avg(sr.insufficient_context_detected) as insufficient_context_rate,
        count(sr.insufficient_context_detected) as n_insufficient_context,
        cast(sum(sr.idk_with_citation) as bigint) as n_idk_with_citation,
        avg(sr.total_tokens) as mean_total_tokens,
        quantile_cont(sr.latency_ms, 0.5) as p50_latency_ms,
        string_agg(distinct sr.signature, '; ' order by sr.signature) as signature
    from scored_rows as sr
    group by grouping sets (
        (sr.model),
        (sr.model, sr.noise_level),
        (sr.model, sr.category)
    )
),

micro as (
    select
        agg.*,
        cast(
            case
                when agg.n_citation_scored = 0 then null
                when agg.citation_n_pred > 0 then agg.citation_n_correct / agg.citation_n_pred
                when agg.citation_n_gold = 0 then 1
                else 0
            end as double
        ) as citation_precision_micro,
        cast(
            case
                when agg.n_citation_scored = 0 then null
                when agg.citation_n_gold > 0 then agg.citation_n_correct / agg.citation_n_gold
                when agg.citation_n_pred = 0 then 1
                else 0
            end as double
        ) as citation_recall_micro
    from aggregated as agg
),

final as (
    select
        mi.slice,
        mi.model,
        mi.noise_level,
        mi.category,
        mi.n,
        mi.answer_em,
        mi.answer_f1,
        mi.answer_em_strict,
        mi.citation_precision_macro,
        mi.citation_recall_macro,
        mi.citation_f1_macro,
        mi.citation_precision_micro,
        mi.citation_recall_micro,
        case
            when mi.citation_precision_micro + mi.citation_recall_micro = 0 then 0.0
            else 2 * mi.citation_precision_micro * mi.citation_recall_micro
                / (mi.citation_precision_micro + mi.citation_recall_micro)
        end as citation_f1_micro,
        mi.n_citation_scored,
        mi.citation_n_pred,
        mi.citation_n_gold,
        mi.citation_n_correct,
        mi.abstain_rate,
        mi.abstention_accuracy,
        mi.n_unanswerable,
        mi.insufficient_context_rate,
        mi.n_insufficient_context,
        mi.n_idk_with_citation,
        mi.mean_total_tokens,
        mi.p50_latency_ms,
        mi.signature
    from micro as mi
)

select * from final
