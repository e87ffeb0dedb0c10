"""Workspaces: as much of TFE's workspace resource as tags and the clients need."""
