"""``litpath solve`` and everything that runs apsp-fw: the stage (``stage``: plan, record, reuse
or run), its command, the apsp-fw runner (``apsp_fw``: arguments, MPI launch, checkpoints), the
cluster checks (``cluster``) and the performance model (``plan``)."""
