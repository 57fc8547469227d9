"""Loaders: one module (or package) per kind of source, each writing through ``db.begin_load``."""
