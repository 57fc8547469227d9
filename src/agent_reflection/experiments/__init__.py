"""Phase-0 experiments, judged against the frozen ``preregistration.toml``.

- The analyses (pure functions, frozen results): ``p1`` (confidence vs correctness); ``p2``
  (which gate would have caught a failure) with ``p2_history`` (its inputs from the database),
  ``p2_signals``, ``p2_buckets``, ``p2_paths``, ``p2_precision``, ``p2_raters``, ``p2_gates``,
  ``p2_shares`` (the verdict statistic) and ``p2_sheet`` (a team's own labelling sheet); ``p3``
  (outcome detectability; ``p3_spark``: the same fraction by Spark over the Parquet export),
  ``gate`` (the Phase-0 gate), ``decision`` (continue / kill / inconclusive from an interval).
- The pre-registration: ``preregistration`` (parse and check), ``registration`` (the lock and
  its amendments), ``provenance`` (what a result saw); ``results`` and ``result_builder`` (the
  ``ExperimentResult`` every analysis returns), ``summary`` (the verdict lines).
- Running them: ``runner`` (``reflect run``), ``notebook`` (what the notebooks call), ``kernel``,
  ``kernel_pool``, ``warm_kernel`` (Jupyter kernels for papermill), ``report`` and ``plots``.
"""
