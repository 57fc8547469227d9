"""Seeded simulations for the demo and the tests, built from production code.

- ``phase0``: a Phase-0 world with known truth (labels with a known AUC, a real git
  repository, a board export, sidecar rows), written as files and loaded by the loaders.
- ``session``: an agent session ending in a real Stop hook run.
- ``calibration``: confidence/correctness draws with a target AUC.
- ``loop``: many sessions in one real repository through the real SessionStart, Stop and
  post-commit hooks, later reverts and fixes, and the truth P1 on loop labels must recover.
"""

#: Sessions the demo's loop world simulates (``LoopSpec.sessions``, ``reflect demo
#: --loop-sessions``); here so that ``reflect --help`` need not import the simulator.
DEMO_LOOP_SESSIONS = 32
