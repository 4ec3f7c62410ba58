from pipeline.solve.plan.commands import main

main()
