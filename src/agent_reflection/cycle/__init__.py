"""The reflection cycle: a rule engine over agent run logs (tier 1), an optional LLM analysis
(tier 2) and mutation requests for the agent platform (tier 3). See docs/cycle.md."""
