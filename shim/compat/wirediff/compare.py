"""Normalising answers and comparing them. Only what must differ between two targets is rewritten:
member ids (generated) become the member's symbol, group ids and topic names their symbols, topic
ids the topic's symbol; throttle times, producer ids and the coordinator's address are dropped; lists whose order
Kafka does not fix (members of a group, listed groups, assigned partitions, the partitions of an
OffsetFetch of all topics: Java hash-table orders of generated ids) are sorted. Error
messages are compared apart (`messages`). Everything else must be equal."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kcodec import api
from kcodec.protocol import error_name

from .generate import FIND_COORDINATOR, LIST_GROUPS, OFFSET_FETCH

DROP = {"throttleTimeMs", "producerId"}       # (each target's transactional ids get their own)
COORDINATOR_FIELDS = {"nodeId", "host", "port"}
MEMBER_FIELDS = {"memberId", "leader"}
GROUP_FIELDS = {"groupId", "groupsNames"}
TOPIC_FIELDS = {"name", "topic", "topicName"}


@dataclass
class Difference:
    step: int
    api: str
    version: int
    path: str
    a: object
    b: object
    message: bool = False         # an errorMessage field (reported apart)

    @property
    def kind(self) -> str:
        """The difference class: api, field path without list positions, and for error codes the
        two error names (two seeds with the same class show the same kshim behaviour)."""
        path = _strip_indices(self.path)
        if self.message:
            return f"{self.api} {path} (message): {_show(self.a)} vs {_show(self.b)}"
        if path.endswith("errorCode") or path == "answer":
            return f"{self.api} v{self.version} {path}: {_show(self.a)} vs {_show(self.b)}"
        return f"{self.api} {path}"

    def line(self) -> str:
        return f"step {self.step} {self.api} v{self.version} {self.path}: {_show(self.a)} | {_show(self.b)}"


def _strip_indices(path: str) -> str:
    out, skip = [], False
    for ch in path:
        if ch == "[":
            skip = True
            out.append("[]")
        elif ch == "]":
            skip = False
        elif not skip:
            out.append(ch)
    return "".join(out)


def _show(x) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


class Normaliser:
    def __init__(self, side):
        self.side = side
        names = {side.t.topic(sym): sym for sym in list(side.t.topic_ids) + ["tx"]}
        self.topics = names
        self.topic_ids = {tid: sym for sym, tid in side.t.topic_ids.items()}

    def answer(self, api_key: int, answer: tuple):
        if answer[0] != "ok":
            return {"answer": answer[0]}, {}
        body = self._walk(answer[1], api_key, "")
        messages: dict = {}
        _pull_messages(body, "", messages)
        messages = {k: self.text(v) for k, v in messages.items()}
        if api_key == LIST_GROUPS:
            body["groups"] = sorted((g for g in body.get("groups", []) if g.get("groupId") is not None),
                                    key=lambda g: g["groupId"])
        return body, messages

    def text(self, s):
        """An error message with this target's generated names replaced by their symbols."""
        if not s:
            return s
        for real, sym in sorted(self.side.ids.items(), key=lambda kv: -len(kv[0])):
            s = s.replace(real, f"<{sym}>")
        head = f"{self.side.t.prefix}-{self.side.tag}-"
        s = s.replace(head, "<group:")
        return s.replace(self.side.t.run_id, "<run>")

    def _walk(self, x, api_key: int, key: str):
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if k in DROP or (api_key == FIND_COORDINATOR and k in COORDINATOR_FIELDS):
                    continue
                out[k] = self._walk(v, api_key, k)
            return out
        if isinstance(x, list):
            items = [self._walk(e, api_key, key) for e in x]
            if items and all(isinstance(e, dict) for e in items):
                # OffsetFetch of all topics lists partitions in the broker's hash-table order
                keys = ("memberId", "groupId", "topicId", "name") + (("partitionIndex",) if api_key == OFFSET_FETCH else ())
                for sort_key in keys:
                    if all(sort_key in e for e in items):
                        return sorted(items, key=lambda e: (str(e[sort_key]), json.dumps(e, sort_keys=True)))
            if key == "partitions" and all(isinstance(e, int) for e in items):
                return sorted(items)
            return items
        if isinstance(x, str):
            return self._string(x, api_key, key)
        return x

    def _string(self, s: str, api_key: int, key: str):
        side = self.side
        if key in MEMBER_FIELDS and s:
            sym = side.ids.get(s)
            return f"<{sym}>" if sym else "<other member>"
        if key in GROUP_FIELDS or key == "key":
            sym = side.group_symbol(s)
            if sym is not None:
                return f"<{sym}>"
            if api_key == LIST_GROUPS:
                return None                 # another run's or another user's group: not compared
            return s
        if key == "topicId":
            return f"<{self.topic_ids.get(s, 'unknown topic id')}>" if s in self.topic_ids else s
        if key in TOPIC_FIELDS and s in self.topics:
            return f"<{self.topics[s]}>"
        if key in ("subscribedTopicRegex",) and s:
            return s.replace(side.t.run_id, "<run>")
        if key == "subscribedTopicNames":
            return s
        return s


def _pull_messages(x, path: str, out: dict) -> None:
    if isinstance(x, dict):
        for k in list(x):
            if k == "errorMessage":
                out[f"{path}.{k}" if path else k] = x.pop(k)
            else:
                _pull_messages(x[k], f"{path}.{k}" if path else k, out)
    elif isinstance(x, list):
        for i, e in enumerate(x):
            _pull_messages(e, f"{path}[{i}]", out)


def diff(a, b, path: str = "") -> list[tuple[str, object, object]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}" if path else k)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    if a != b:
        if path.endswith("errorCode") and isinstance(a, int) and isinstance(b, int):
            return [(path, error_name(a), error_name(b))]
        return [(path, a, b)]
    return []


def compare(sides) -> list[Difference]:
    """Every difference between the two sides' answers to the scenario's steps."""
    sa, sb = sides
    na, nb = Normaliser(sa), Normaliser(sb)
    out: list[Difference] = []
    for idx, step in enumerate(sa.sc.steps):
        if "sleep" in step:
            continue
        name = api.API_KEYS[step["api"]]
        got_a, got_b = sa.answers.get(idx), sb.answers.get(idx)
        if got_a is None or got_b is None:
            if (got_a is None) != (got_b is None):
                out.append(Difference(idx, name, step["v"], "answer",
                                      "parked" if got_a is None else got_a[0],
                                      "parked" if got_b is None else got_b[0]))
            continue
        if got_a[0] != "ok" or got_b[0] != "ok":
            if got_a[0] != got_b[0]:         # answered on one side, the connection closed on the other
                out.append(Difference(idx, name, step["v"], "answer", got_a[0], got_b[0]))
                continue
        (body_a, msg_a), (body_b, msg_b) = na.answer(step["api"], got_a), nb.answer(step["api"], got_b)
        for path, x, y in diff(body_a, body_b):
            out.append(Difference(idx, name, step["v"], path, x, y))
        for path, x, y in diff(msg_a, msg_b):
            out.append(Difference(idx, name, step["v"], path, x, y, message=True))
    return out
