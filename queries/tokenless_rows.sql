-- grain: one row per metric
-- Rows a token-based metric could not see: its tokenizer found no token in the reference or in
-- the response (a script it does not read, only punctuation, an empty text), so its score there
-- says nothing about the answer. ROUGE counts rouge_1_ref = 0 or rouge_1_pred = 0, BLEU
-- bleu_ref_len = 0 or bleu_hyp_len = 0, over the rows where the metric ran (`n_rows`, 0 when it
-- did not run). The headline prints
-- a footnote for every metric with such rows; `[lexical] rouge_tokenizer` / `bleu_tokenize`
-- (`auto` by default) choose tokenizers that read every script (docs/metrics.md).
with scored as (
    select * from scores
),

counts as (
    select
        'rouge' as metric,
        count(*) filter (where s.rouge_1_ref is not null) as n_rows,
        count(*) filter (where s.rouge_1_ref = 0 or s.rouge_1_pred = 0) as n_without_tokens,
        count(*) filter (where s.rouge_1_ref = 0) as n_reference_without_tokens,
        count(*) filter (where s.rouge_1_pred = 0) as n_response_without_tokens
    from scored as s
    union all
    select
        'bleu' as metric,
        count(*) filter (where s.bleu_ref_len is not null) as n_rows,
        count(*) filter (where s.bleu_ref_len = 0 or s.bleu_hyp_len = 0) as n_without_tokens,
        count(*) filter (where s.bleu_ref_len = 0) as n_reference_without_tokens,
        count(*) filter (where s.bleu_hyp_len = 0) as n_response_without_tokens
    from scored as s
),

final as (
    select * from counts
)

select * from final
