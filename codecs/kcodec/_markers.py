"""The default-value markers of the generated field metadata (`_rt.F.default`): LIST (an empty list)
and STRUCT (a default struct), shared by the runtime (_rt.py) and the JSON converter (_json.py)."""

LIST = "<empty list>"
STRUCT = "<default struct>"
