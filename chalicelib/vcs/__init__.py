"""VCS connections (OAuth clients and tokens) and reading module sources from git."""
