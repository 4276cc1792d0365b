-- grain: one row per (slice, model, noise_level, category, question_type)
-- The aggregates behind by_model, by_model_noise, by_model_category and by_model_question_type,
-- defined once. `slice` names the grouping; the columns it does not group by are null (e.g.
-- 'model': noise_level, category and question_type; 'model_noise': category and question_type),
-- while a null in a grouped column is a real null key. Each slice is one copy of the rows
-- (keyed_rows: the rows crossed with the four slice names) grouped by the slice and its keys,
-- not a grouping set: a query of one slice (by_model and the headline, by_model_noise, ...) reads
-- and aggregates that slice alone, as DuckDB pushes its filter into the list of names (by_model
-- at 1M rows: 0.19 s against 0.49 s with grouping sets, which compute every slice whatever the
-- query keeps; docs/benchmarks.md). The cross join binds the scores' columns once; a union of
-- four branches, one per slice, bound them four times (by_model's binding 35 -> 27 ms,
-- metrics_by_slice's 32 -> 21 ms).
--
-- Means skip null rows (a metric that was not computed, or is undefined for the row): faithfulness
-- and overlap are null on rows without passages (n_contexts = 0), so their N is n_grounding, and
-- overlap_micro sums the sentences of those rows only; n_no_passages counts the others.
-- Macro citation scores are means of the per-row scores; micro ones come from the summed
-- sufficient statistics with the per-row convention for a zero denominator: nothing predicted
-- scores precision 1.0 when nothing is gold either, else 0.0 (recall alike), and F1 is 0.0 when
-- precision and recall are both 0.
--
-- The aggregates above `-- registry:` are written by hand (macro and micro, rates, medians).
-- After them pipeline/views.py adds one column for every other registered metric, named after
-- it and aggregated as its kind says: the mean of a score or flag, the sum of a count; labels
-- and lists are left out. A metric this file already reads (`sr.NAME`) is left to it.
with scored_rows as (
    select * from scores
),

keyed_rows as (
    select ks.slice, sr.* replace (
        case when ks.slice = 'model_noise' then sr.noise_level end as noise_level,
        case when ks.slice = 'model_category' then sr.category end as category,
        case when ks.slice = 'model_question_type' then sr.question_type end as question_type)
    from scored_rows as sr
    cross join (
        values ('model'), ('model_noise'), ('model_category'), ('model_question_type')
    ) as ks (slice)
),

aggregated as (
    select
        sr.slice,
        sr.model as model,
        sr.noise_level as noise_level,
        sr.category as category,
        sr.question_type as question_type,
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
        avg(sr.rouge_1) as rouge_1,
        avg(sr.rouge_2) as rouge_2,
        avg(sr.rouge_l) as rouge_l,
        cast(sum(sr.rouge_1_overlap) as bigint) as rouge_1_overlap,
        cast(sum(sr.rouge_1_pred) as bigint) as rouge_1_pred,
        cast(sum(sr.rouge_1_ref) as bigint) as rouge_1_ref,
        cast(sum(sr.rouge_2_overlap) as bigint) as rouge_2_overlap,
        cast(sum(sr.rouge_2_pred) as bigint) as rouge_2_pred,
        cast(sum(sr.rouge_2_ref) as bigint) as rouge_2_ref,
        cast(sum(sr.rouge_l_lcs) as bigint) as rouge_l_lcs,
        avg(sr.bleu) as bleu,
        avg(sr.bleu_textbook) as bleu_textbook,
        avg(sr.numeric_accuracy) as numeric_accuracy,
        avg(sr.content_coverage) as content_coverage,
        avg(sr.keyword_overlap) as keyword_overlap,
        avg(sr.tfidf_relevance) as tfidf_relevance,
        avg(sr.semantic_similarity) as semantic_similarity,
        avg(sr.semantic_relevance) as semantic_relevance,
        avg(sr.overlap) as overlap,
        avg(sr.faithfulness) as faithfulness,
        count(sr.overlap) as n_grounding,
        cast(sum(case when sr.n_contexts = 0 then 1 when sr.n_contexts > 0 then 0 end) as bigint)
            as n_no_passages,
        cast(sum(sr.n_sentences) as bigint) as n_sentences,
        cast(sum(sr.n_supported) as bigint) as n_supported,
        cast(sum(sr.n_sentences) filter (where sr.overlap is not null) as bigint)
            as grounding_sentences,
        cast(sum(sr.n_supported) filter (where sr.overlap is not null) as bigint)
            as grounding_supported,
        -- registry: slice_aggregates(sr)
        string_agg(distinct sr.signature, '; ' order by sr.signature) as signature
    from keyed_rows as sr
    group by sr.slice, sr.model, sr.noise_level, sr.category, sr.question_type
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
        ) as citation_recall_micro,
        -- Corpus-level ROUGE from summed counts, with rouge-score's per-row conventions:
        -- precision = overlap / max(predicted, 1), recall = overlap / max(reference, 1).
        cast(agg.rouge_1_overlap as double) / greatest(agg.rouge_1_pred, 1) as rouge_1_p_micro,
        cast(agg.rouge_1_overlap as double) / greatest(agg.rouge_1_ref, 1) as rouge_1_r_micro,
        cast(agg.rouge_2_overlap as double) / greatest(agg.rouge_2_pred, 1) as rouge_2_p_micro,
        cast(agg.rouge_2_overlap as double) / greatest(agg.rouge_2_ref, 1) as rouge_2_r_micro,
        cast(agg.rouge_l_lcs as double) / greatest(agg.rouge_1_pred, 1) as rouge_l_p_micro,
        cast(agg.rouge_l_lcs as double) / greatest(agg.rouge_1_ref, 1) as rouge_l_r_micro
    from aggregated as agg
),

final as (
    select
        mi.slice,
        mi.model,
        mi.noise_level,
        mi.category,
        mi.question_type,
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
        mi.faithfulness,
        mi.overlap,
        mi.n_grounding,
        mi.n_no_passages,
        -- supported sentences / all sentences over the slice's rows with an overlap (overlap is
        -- the mean of row ratios)
        case
            when mi.grounding_sentences > 0 then mi.grounding_supported / mi.grounding_sentences
        end as overlap_micro,
        mi.n_sentences,
        mi.n_supported,
        mi.rouge_1,
        mi.rouge_2,
        mi.rouge_l,
        case
            when mi.rouge_1_p_micro + mi.rouge_1_r_micro = 0 then 0.0
            else 2 * mi.rouge_1_p_micro * mi.rouge_1_r_micro
                / (mi.rouge_1_p_micro + mi.rouge_1_r_micro)
        end as rouge_1_micro,
        case
            when mi.rouge_2_p_micro + mi.rouge_2_r_micro = 0 then 0.0
            else 2 * mi.rouge_2_p_micro * mi.rouge_2_r_micro
                / (mi.rouge_2_p_micro + mi.rouge_2_r_micro)
        end as rouge_2_micro,
        case
            when mi.rouge_l_p_micro + mi.rouge_l_r_micro = 0 then 0.0
            else 2 * mi.rouge_l_p_micro * mi.rouge_l_r_micro
                / (mi.rouge_l_p_micro + mi.rouge_l_r_micro)
        end as rouge_l_micro,
        mi.bleu,
        mi.bleu_textbook,
        mi.numeric_accuracy,
        mi.content_coverage,
        mi.keyword_overlap,
        mi.tfidf_relevance,
        mi.semantic_similarity,
        mi.semantic_relevance,
        -- registry: slice_columns(mi)
        mi.signature
    from micro as mi
)

select * from final
