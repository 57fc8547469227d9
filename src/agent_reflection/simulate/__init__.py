"""Simulations on scratch data: an agent session ending in a real Stop hook run, and more later."""
