"""Retrieval metrics: trec_eval's ranking measures (family ``retrieval``) and whether the
answer is in what was retrieved (family ``context``)."""
