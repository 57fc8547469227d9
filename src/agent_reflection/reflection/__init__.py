"""The reflection.v1 record a session leaves behind, and the risk floor it carries.

``fields`` (the one declaration of the record), ``checks`` (import-light field checks the Stop
hook runs), ``record`` (the typed model, JSON Schema and validator), ``risk_floor`` (the
deterministic review floor and its TOML table). Nothing is imported here: the Stop hook
imports ``checks`` and ``risk_floor`` on every stop.
"""
