"""One module per model."""
