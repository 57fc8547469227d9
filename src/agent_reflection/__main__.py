from agent_reflection.cli import run

run()
