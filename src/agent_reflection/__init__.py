"""agent-reflection: capture coding agents' end-of-run self-reflection and test whether it pays.

This package's top level imports nothing heavy: the Claude Code hooks import from it on every
agent stop or tool call, so start-up time matters.
"""

__version__ = "0.1.0"
