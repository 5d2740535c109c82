"""kshim's metrics in Prometheus text format (exposition format 0.0.4), standard library only.

Kept by the proxy when the admin endpoint is on (`--admin-port`, shim/admin_http.py); off, nothing is
counted. What is counted (all on the event loop thread, no locks):
- requests by api/version (every request that passed the version check);
- responses by api/version/error: every response kshim sends except Produce and Fetch (their
  bodies stay bytes and are not read); `error` is the first non-zero error code in the response
  (top level first, then groups/topics/partitions), 0 when none;
- upstream latency per api: forward to broker answer, a histogram;
- coordinator events (rebalances, generations, members joining/leaving/removed) by kind;
- injected faults by action/api;
and at scrape time: open client connections, groups by state (read from the coordinator).
"""

from __future__ import annotations

import collections
import time

from kcodec import api
from kcodec.protocol import ApiKey

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
UNREAD = (ApiKey.PRODUCE, ApiKey.FETCH)   # responses stay bytes


def _api(key: int) -> str:
    return api.API_KEYS.get(key, str(key))


def first_error(obj, depth: int = 0) -> int:
    """The first non-zero `*error_code` of a decoded response, top level before nested lists."""
    slots = getattr(obj, "__slots__", ())
    for name in slots:
        if name.endswith("error_code"):
            value = getattr(obj, name, 0)
            if value:
                return value
    if depth < 4:
        for name in slots:
            value = getattr(obj, name, None)
            if type(value) is list:
                for item in value:
                    if hasattr(item, "__slots__"):
                        err = first_error(item, depth + 1)
                        if err:
                            return err
    return 0


class Histogram:
    __slots__ = ("counts", "total", "count")

    def __init__(self):
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        i = 0
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                break
        else:
            i = len(LATENCY_BUCKETS)
        self.counts[i] += 1
        self.total += seconds
        self.count += 1


class Metrics:
    clock = staticmethod(time.monotonic)

    def __init__(self):
        self.requests: collections.Counter = collections.Counter()      # (api, version)
        self.responses: collections.Counter = collections.Counter()     # (api, version, error)
        self.events: collections.Counter = collections.Counter()        # coordinator event kind
        self.faults: collections.Counter = collections.Counter()        # (action, api)
        self.latency: dict[int, Histogram] = {}
        self.unreadable = 0
        self.started = time.time()

    # ------------------------------------------------------------------ hooks (shim/proxy/session.py)
    def request(self, api_key: int, version: int) -> None:
        self.requests[(api_key, version)] += 1

    def response(self, slot, data) -> None:
        key = slot.api_key
        if key in UNREAD:
            return
        try:
            hv = 0 if key == ApiKey.API_VERSIONS else api.response_header_version(key, slot.version)
            _, pos = api.ResponseHeader.decode_from(data, 0, hv)
            body = api.RESPONSES[key].decode(memoryview(data)[pos:], slot.version)
            err = first_error(body)
        except Exception:   # noqa: BLE001 - e.g. ApiVersions answered at v0 for a too-new request
            self.unreadable += 1
            err = -2
        self.responses[(key, slot.version, err)] += 1

    def upstream_latency(self, api_key: int, sent: float) -> None:
        h = self.latency.get(api_key)
        if h is None:
            h = self.latency[api_key] = Histogram()
        h.observe(self.clock() - sent)

    def event(self, ev: dict) -> None:
        self.events[ev.get("event", "?")] += 1

    def fault(self, action: str, api_key: int) -> None:
        self.faults[(action, api_key)] += 1

    # ------------------------------------------------------------------ exposition
    def render(self, proxy=None) -> str:
        out: list[str] = []

        def family(name: str, kind: str, help_: str) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")

        family("kshim_requests_total", "counter", "Client requests by API and version.")
        for (key, v), n in sorted(self.requests.items()):
            out.append(f'kshim_requests_total{{api="{_api(key)}",version="{v}"}} {n}')
        family("kshim_responses_total", "counter",
               "Responses sent to clients by API, version and first error code (Produce/Fetch not read).")
        for (key, v, err), n in sorted(self.responses.items()):
            out.append(f'kshim_responses_total{{api="{_api(key)}",version="{v}",error="{err}"}} {n}')
        family("kshim_upstream_latency_seconds", "histogram", "Forwarded request to broker answer, by API.")
        for key, h in sorted(self.latency.items()):
            cum = 0
            for bound, c in zip(LATENCY_BUCKETS, h.counts):
                cum += c
                out.append(f'kshim_upstream_latency_seconds_bucket{{api="{_api(key)}",le="{bound}"}} {cum}')
            out.append(f'kshim_upstream_latency_seconds_bucket{{api="{_api(key)}",le="+Inf"}} {h.count}')
            out.append(f'kshim_upstream_latency_seconds_sum{{api="{_api(key)}"}} {h.total:.6f}')
            out.append(f'kshim_upstream_latency_seconds_count{{api="{_api(key)}"}} {h.count}')
        family("kshim_group_rebalances_total", "counter", "Group rebalances started by kshim's coordinator.")
        out.append(f"kshim_group_rebalances_total {self.events.get('rebalance', 0)}")
        family("kshim_group_events_total", "counter", "Coordinator events by kind (docs/kshim-trace.md).")
        for kind, n in sorted(self.events.items()):
            out.append(f'kshim_group_events_total{{event="{kind}"}} {n}')
        family("kshim_faults_injected_total", "counter", "Requests acted on by fault rules, by action and API.")
        for (action, key), n in sorted(self.faults.items()):
            out.append(f'kshim_faults_injected_total{{action="{action}",api="{_api(key)}"}} {n}')
        if proxy is not None:
            family("kshim_connections_open", "gauge", "Client connections open.")
            out.append(f"kshim_connections_open {len(proxy.sessions)}")
            family("kshim_bad_input_closes_total", "counter", "Client connections closed for bad input.")
            out.append(f"kshim_bad_input_closes_total {proxy.stats.get('bad_input', 0)}")
            groups = getattr(getattr(proxy, "groups", None), "coordinator", None)
            if groups is not None:
                family("kshim_groups", "gauge", "Groups held by kshim's coordinator, by state.")
                states = collections.Counter(getattr(g, "state", "?") for g in groups.groups.values())
                for state in sorted(set(states) | {"Empty", "PreparingRebalance", "CompletingRebalance",
                                                   "Stable", "Dead"}):
                    out.append(f'kshim_groups{{state="{state}"}} {states.get(state, 0)}')
        family("kshim_start_time_seconds", "gauge", "Start time of the process (Unix seconds).")
        out.append(f"kshim_start_time_seconds {self.started:.3f}")
        return "\n".join(out) + "\n"
