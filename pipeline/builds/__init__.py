"""pipeline.builds."""
