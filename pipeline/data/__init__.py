"""Package data: the stopword list and synonym groups used by the keyword metrics."""
