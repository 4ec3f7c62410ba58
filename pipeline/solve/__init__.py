"""pipeline.solve.apsp_fw."""
