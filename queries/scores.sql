-- grain: one row per (source, row_number), i.e. one scored input row
-- Staging view over scores.parquet; with rejected.sql the only SQL that reads a file.
-- eval_data_dir() is a macro that pipeline/views.py defines: the output directory's absolute path.
with scores_file as (
    select * from read_parquet(eval_data_dir() || '/scores.parquet')
),

-- Every column of the scores.parquet contract with its type and no rows. A run restricted with
-- --metrics lacks some metric columns; `union all by name` fills them with typed nulls, so every
-- view builds whatever subset was computed. Columns the contract does not know come after these.
contract as (
    select
        cast(null as varchar) as id,
        cast(null as varchar) as model,
        cast(null as varchar) as run,
        cast(null as varchar) as category,
        cast(null as double) as noise_level,
        cast(null as varchar) as question_type,
        cast(null as varchar) as source,
        cast(null as bigint) as row_number,
        cast(null as tinyint) as answer_em,
        cast(null as double) as answer_f1,
        cast(null as tinyint) as answer_em_strict,
        cast(null as bigint) as citation_n_pred,
        cast(null as bigint) as citation_n_gold,
        cast(null as bigint) as citation_n_correct,
        cast(null as double) as citation_precision,
        cast(null as double) as citation_recall,
        cast(null as double) as citation_f1,
        cast(null as tinyint) as abstained,
        cast(null as tinyint) as abstention_correct,
        cast(null as tinyint) as insufficient_context_detected,
        cast(null as tinyint) as idk_with_citation,
        cast(null as bigint) as total_tokens,
        cast(null as double) as latency_ms,
        cast(null as bigint) as rouge_1_overlap,
        cast(null as bigint) as rouge_1_pred,
        cast(null as bigint) as rouge_1_ref,
        cast(null as bigint) as rouge_2_overlap,
        cast(null as bigint) as rouge_2_pred,
        cast(null as bigint) as rouge_2_ref,
        cast(null as bigint) as rouge_l_lcs,
        cast(null as double) as rouge_1,
        cast(null as double) as rouge_2,
        cast(null as double) as rouge_l,
        cast(null as bigint) as bleu_matches_1,
        cast(null as bigint) as bleu_matches_2,
        cast(null as bigint) as bleu_matches_3,
        cast(null as bigint) as bleu_matches_4,
        cast(null as bigint) as bleu_totals_1,
        cast(null as bigint) as bleu_totals_2,
        cast(null as bigint) as bleu_totals_3,
        cast(null as bigint) as bleu_totals_4,
        cast(null as bigint) as bleu_hyp_len,
        cast(null as bigint) as bleu_ref_len,
        cast(null as double) as bleu,
        cast(null as double) as bleu_textbook,
        cast(null as double) as numeric_accuracy,
        cast(null as double) as content_coverage,
        cast(null as double) as keyword_overlap,
        cast(null as double) as tfidf_relevance,
        cast(null as double) as semantic_relevance,
        cast(null as double) as semantic_similarity,
        cast(null as bigint) as n_sentences,
        cast(null as bigint) as n_supported,
        cast(null as double) as overlap,
        cast(null as double) as faithfulness,
        cast(null as varchar) as scoring_category,
        cast(null as tinyint) as category_known,
        cast(null as tinyint) as length_ok,
        cast(null as varchar) as length_feedback,
        cast(null as double) as fluency_score,
        cast(null as double) as coherence_score,
        cast(null as double) as conciseness_score,
        cast(null as double) as readability_score,
        cast(null as double) as composite_quality,
        cast(null as varchar) as quality_feedback,
        cast(null as varchar[]) as bias_categories,
        cast(null as tinyint) as has_bias_risk,
        cast(null as double) as bias_severity,
        cast(null as double) as perspective_balance,
        cast(null as double) as safety_score,
        cast(null as varchar) as safety_feedback,
        cast(null as double) as intent_match,
        cast(null as double) as refusal_score,
        cast(null as tinyint) as is_refusal,
        cast(null as double) as depth_score,
        cast(null as double) as step_completeness,
        cast(null as double) as creativity_score,
        cast(null as double) as relevance_adjustment,
        cast(null as double) as composite_relevance,
        cast(null as varchar) as relevance_feedback,
        cast(null as varchar) as signature
    where false
),

final as (
    select * from contract
    union all by name
    select * from scores_file
)

select * from final
