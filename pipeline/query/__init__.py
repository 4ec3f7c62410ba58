"""pipeline.query."""
