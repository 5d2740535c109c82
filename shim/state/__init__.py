"""Durable group state: kshim's compacted state topic on the upstream cluster (docs/state-topic.md).

format.py  key/value bytes of the coordinator's records (versioned, explicit struct packing)
batch.py   a RecordBatch v2 encoder (uncompressed) for the appends
log.py     the I/O side: create the topic, replay it at start, append records (acks=all) in order
"""
