"""Compiled text kernels (numba) over Arrow string buffers: offsets plus UTF-8 bytes.

Each kernel keeps the reference its polars expression reproduces (the parity tests run against
both); :mod:`pipeline.text.kernels.buffers` moves columns between polars and the kernels without
a copy per row. Compiled functions are cached on disk (numba's ``cache=True``: ``__pycache__``
beside the module, or ``NUMBA_CACHE_DIR``), so only the first process compiles.
"""
