"""Readers for every supported input format and atomic writers for results."""
