"""One router per resource, all under /v1."""
