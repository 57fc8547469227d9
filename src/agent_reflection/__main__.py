from agent_reflection.cli import main

main()
