"""kshim's own Kafka client: the connections kshim opens itself to the upstream cluster (client.py:
`UpstreamClient`, TLS; sasl.py: SASL PLAIN/SCRAM for those connections).

A layer of its own (docs/architecture.md, "Layers"): the proxy, the durable state and the
authorization all use it, and it imports none of them (only kcodec and shim.config).
"""
