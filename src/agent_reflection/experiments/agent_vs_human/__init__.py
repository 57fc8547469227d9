"""Agent-authored vs human commits in one repository (exploratory; not in the Phase-0 gate).

:func:`run_agent_vs_human` is the analysis. Its parts: :mod:`.analysis` (the commits' fates
read from the database and git, the groups, their rates and differences) and :mod:`.report`
(what the notebook and the CLI show: tables, the figure, the opening summary).
"""

from agent_reflection.experiments.agent_vs_human.analysis import run_agent_vs_human

__all__ = ["run_agent_vs_human"]
