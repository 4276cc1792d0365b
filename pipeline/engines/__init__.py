"""Distributed engines running the engine-neutral batch functions of :mod:`pipeline.batch`.

:mod:`pipeline.engines.spark` runs an evaluation on Apache Spark (the optional ``spark``
extra); ``docs/distributed.md`` explains how, and plans the same for Ray Data.
"""
