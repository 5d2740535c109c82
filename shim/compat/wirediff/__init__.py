"""`kshim compat --wire`: seeded random group-request scenarios sent in lock-step to two targets over
raw connections, answers normalised and compared field by field (docs/kshim-compat.md)."""
