"""pytest plugin entry point (filled by the runtime audit); must stay torch-free at import."""
