"""Offline evaluation pipeline for LLM and RAG answers (vectorized metrics, DuckDB views)."""

__version__ = "0.1.0"
