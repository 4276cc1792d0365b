"""Category-aware composites: quality, safety, relevance, overall."""
