"""Lexical metrics: ROUGE, BLEU, numbers, keywords, TF-IDF relevance."""
