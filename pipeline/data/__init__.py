"""Package data: stopwords and synonyms of the keyword metrics; TOML rules of the composites."""
