"""`kshim compat`: scripted group scenarios run with real clients against any bootstrap (the real
broker or kshim), each returning normalised observations, diffed between two targets (docs/kshim-compat.md)."""
