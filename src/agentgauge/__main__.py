from agentgauge.cli import main

main()
