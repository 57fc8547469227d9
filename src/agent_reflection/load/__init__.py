"""Loaders: one module per source, each with the loads/rejected bookkeeping."""
