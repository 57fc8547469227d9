"""Phase-0 experiments P1, P2, P3: pure functions judged against ``preregistration.toml``."""
