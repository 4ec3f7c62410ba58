"""What a stage uses of the machine, and nothing of the literature: errors a user acts on
(``errors``), atomic records and capped line reads (``files``), the memory budget and spill
folders (``resources``), progress lines and their formats (``progress``), child processes and
PID files (``process``), and the columnar sort and group helpers (``columnar``)."""
