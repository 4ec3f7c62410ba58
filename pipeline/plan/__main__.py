from pipeline.plan.commands import main

main()
