"""`kshim trace import`: packet captures and broker logs into kshim trace records (docs/kshim-trace-import.md)."""
