"""The CUI <-> SPOKE mapping (design.md §6.7); everything is in :mod:`.xrefs` for now."""
