"""Phase-0 experiments, judged against the frozen ``preregistration.toml``.

One package per experiment, each with one entry point and its parts inside:

- :mod:`.p1` (``run_p1``): is self-rated confidence a usable signal of correctness?
- :mod:`.p2` (``run_p2``): of the failures in git history, which gate would have caught each?
- :mod:`.p3` (``run_p3``): can a machine tell whether finished work was right?
- :mod:`.agent_vs_human` (``run_agent_vs_human``): agent-authored vs human commits
  (exploratory, not in the gate).

Beside them, what every experiment shares, one concept a module:

- :mod:`.registration`: the pre-registration (every parameter, parsed and checked), its lock
  and amendments, the data it saw, the samples its effects imply;
- :mod:`.verdict`: the three-way decision from an interval, and the Phase-0 gate;
- :mod:`.results`: the ``ExperimentResult`` every experiment returns, and results.v1;
- :mod:`.provenance`: what data a result read;
- :mod:`.report`: the summary every report opens with, the run's index and summary.md;
- :mod:`.plots`: the figures; :mod:`.notebook`: what the notebooks call;
- :mod:`.runner`: ``reflect run``'s orchestration (running the notebooks is
  :mod:`agent_reflection.execute`).
"""
