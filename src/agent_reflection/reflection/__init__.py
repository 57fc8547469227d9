"""The reflection.v1 record a session leaves behind, and the risk floor it carries.

``checks`` (import-light field checks the Stop hook runs), ``record`` (the typed model, JSON
Schema and validator), ``risk_core`` and ``risk_floor`` (the deterministic review floor).
Nothing is imported here: the Stop hook imports ``checks`` and ``risk_core`` on every stop.
"""
