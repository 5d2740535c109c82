"""kshim's group service: the coordinator plugged into the proxy (service.py)."""
