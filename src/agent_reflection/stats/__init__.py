"""Statistics the Phase-0 experiments own: one metric per module, frozen results.

- :mod:`.interval` the one interval type (an estimate and its bounds) every result with an
  interval is, or holds

- :mod:`.auc` rank-based ROC AUC (equals scikit-learn's ``roc_auc_score``, ties included)
- :mod:`.delong` DeLong variance and CI in O(n log n)
- :mod:`.wilson` Wilson score interval for a proportion
- :mod:`.ece` reliability bins and expected calibration error on pre-registered bins
- :mod:`.brier` Brier score; :mod:`.lift` lift in the top confidence decile
- :mod:`.roc` ROC curve points
- :mod:`.stratified` pair-weighted stratified AUC, clustered DeLong variance, Cochran's Q
- :mod:`.cluster_bootstrap` seeded cluster bootstrap of the stratified AUC (vectorised; one
  stratum and no clusters: the plain bootstrap of the AUC over rows)
- :mod:`.power` sample sizes from a smallest useful effect (Hanley-McNeil; score test)
"""

from agent_reflection.stats._common import UndefinedStatistic

__all__ = ["UndefinedStatistic"]
