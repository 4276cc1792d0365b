"""Text normalization and tokenization as polars expressions."""
