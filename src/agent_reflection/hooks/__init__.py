"""Claude Code hooks: stdlib-only entry points that exit 0 on every fault."""
