"""Organization tags and the workspace tag relationships."""
