"""Answer, citation, abstention and usage metrics (SQuAD-style EM/F1, citation P/R/F1)."""
