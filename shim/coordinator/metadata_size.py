"""The committed-metadata size limit of OffsetCommit and TxnOffsetCommit."""

from __future__ import annotations


def metadata_too_large(metadata: str | None, max_bytes: int) -> bool:
    """OffsetMetadataManager.isMetadataInvalid: Java's String.length() - UTF-16 code units, so a
    character outside the Basic Multilingual Plane (an emoji) counts 2 - against
    offset.metadata.max.bytes."""
    if not metadata or len(metadata) * 2 <= max_bytes:     # at most 2 units per character
        return False
    return len(metadata.encode("utf-16-le", "surrogatepass")) // 2 > max_bytes
