"""Embedding metrics: semantic similarity and relevance, grounding."""
