"""Projects: as much of TFE's project resource as tag bindings and the clients need."""
