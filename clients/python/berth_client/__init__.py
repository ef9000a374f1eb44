"""berth_client: a Python client of Berth over gRPC.

    from berth_client import Client, ws, types
    with Client("127.0.0.1:50051", token=None) as berth:
        repo = berth.call("RegisterRepository", ws.RegisterRepositoryRequest(name="demo", request_id="r-1")).repository
        with berth.heartbeating(session_id):      # keeps the session connected while held
            ...
        for event in berth.events(after_seq=0, repo_ids=[repo.id]):   # resumes after a disconnect
            ...

The generated stubs (berth_client/_stubs, from proto/ by ../generate.sh) are the contract; this
module adds what every caller would otherwise write again: the bearer token, deadlines, retries
of idempotent calls, the google.rpc.ErrorInfo of a failure as an exception, a heartbeat thread and
an event iterator that resumes from its last seq.
"""
import os
import sys
import threading
import time

_STUBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_stubs")
if _STUBS not in sys.path:
    sys.path.insert(0, _STUBS)

import grpc  # noqa: E402
from berth.v1 import event_pb2 as events_pb  # noqa: E402,F401
from berth.v1 import turn_service_pb2 as turns  # noqa: E402
from berth.v1 import turn_service_pb2_grpc as _turns_grpc  # noqa: E402
from berth.v1 import types_pb2 as types  # noqa: E402,F401
from berth.v1 import workspace_service_pb2 as ws  # noqa: E402
from berth.v1 import workspace_service_pb2_grpc as _ws_grpc  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

__all__ = ["Client", "BerthError", "ws", "turns", "types", "events_pb", "IDEMPOTENT"]

# Calls that may be repeated without changing the outcome: reads, and writes whose second run is a
# no-op by contract (Heartbeat renews a lease; a retried EndTurn answers the first one's result). A
# RegisterRepository, TransitionChangeset or BeginTurn is safe to retry only with request_id /
# expected_state / client_turn_id, so those are retried only when the request carries one.
IDEMPOTENT = frozenset({
    "ListRepositories", "GetWorkspace", "ListSessions", "CountActive", "ReadFile", "ListFiles",
    "DescribeOtherModifiers", "DiffWorkspace", "DiffChangeset", "ListChangesets", "GetChangeset", "Heartbeat", "ListTurns", "GetPoolStats",
    "GetWorkspaceMap", "TurnHeartbeat", "EndTurn", "CancelTurn",
})
# Codes that say the call did not reach a decision: the server was unreachable or stopping.
_RETRY_CODES = frozenset({grpc.StatusCode.UNAVAILABLE})


class BerthError(Exception):
    """A failed call: the gRPC code, Berth's machine-readable reason and metadata, the bad fields."""

    def __init__(self, err):
        self.code = err.code()
        self.message = err.details() or ""
        self.reason = ""
        self.metadata = {}
        self.field_violations = []
        for key, value in err.trailing_metadata() or ():
            if key != "grpc-status-details-bin":
                continue
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                bad = error_details_pb2.BadRequest()
                if detail.Unpack(info):
                    self.reason = info.reason
                    self.metadata = dict(info.metadata)
                elif detail.Unpack(bad):
                    self.field_violations = [(v.field, v.reason, v.description) for v in bad.field_violations]
        super().__init__(f"{self.code.name} {self.reason}: {self.message}".strip())


def _safe_to_retry(method, request):
    if method in IDEMPOTENT:
        return True
    if method == "RegisterRepository":
        return bool(request.request_id)
    if method == "TransitionChangeset":
        return request.expected_state != 0
    if method == "BeginTurn":
        return bool(request.client_turn_id)
    return False


class Client:
    """One channel to a Berth server's gRPC port, with both services."""

    def __init__(self, target, token=None, timeout=10.0, retries=3, backoff=0.2, credentials=None):
        self.channel = grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)
        self._metadata = (("authorization", "Bearer " + token),) if token else ()
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.workspace = _ws_grpc.WorkspaceServiceStub(self.channel)
        self.turn = _turns_grpc.TurnServiceStub(self.channel)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.channel.close()

    def _method(self, name):
        for stub in (self.workspace, self.turn):
            fn = getattr(stub, name, None)
            if fn is not None:
                return fn
        raise AttributeError(f"no Berth RPC named {name}")

    def call(self, method, request, timeout=None):
        """Calls a unary RPC by name; raises BerthError. Idempotent calls are retried on UNAVAILABLE."""
        fn = self._method(method)
        attempts = 1 + (self.retries if _safe_to_retry(method, request) else 0)
        for attempt in range(attempts):
            try:
                return fn(request, metadata=self._metadata, timeout=timeout or self.timeout)
            except grpc.RpcError as err:
                if err.code() not in _RETRY_CODES or attempt == attempts - 1:
                    raise BerthError(err) from None
                time.sleep(self.backoff * (2 ** attempt))
        raise AssertionError("unreachable")

    def heartbeating(self, session_id, interval=None):
        """A context manager that heartbeats the session from a thread while it is held."""
        return _Heartbeat(self, session_id, interval)

    def events(self, after_seq=0, repo_ids=(), kinds=(), idle_timeout=None):
        """Yields events after `after_seq`, forever; after a dropped stream it resumes from the last seq seen.

        `idle_timeout` (seconds) ends the iteration when no event came for that long.
        """
        last = after_seq
        while True:
            request = ws.WatchEventsRequest(after_seq=last, repo_ids=list(repo_ids), kinds=list(kinds))
            stream = self.workspace.WatchEvents(request, metadata=self._metadata, timeout=idle_timeout)
            try:
                for response in stream:
                    last = response.event.seq
                    yield response.event
                return
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and idle_timeout is not None:
                    return
                if err.code() not in _RETRY_CODES and not (err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and BerthError(err).reason == "SUBSCRIBER_TOO_SLOW"):
                    raise BerthError(err) from None
                time.sleep(self.backoff)
            finally:
                stream.cancel()


class _Heartbeat:
    def __init__(self, client, session_id, interval):
        self.client = client
        self.session_id = session_id
        self.interval = interval
        self._stop = threading.Event()
        self._thread = None
        self.error = None

    def __enter__(self):
        lease_ms = self.client.call("Heartbeat", ws.HeartbeatRequest(session_id=self.session_id)).lease_ms
        # A third of the lease: two beats may be lost before the session is stranded.
        every = self.interval or max(0.05, lease_ms / 3000.0)
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()
        return self

    def _run(self, every):
        while not self._stop.wait(every):
            try:
                self.client.call("Heartbeat", ws.HeartbeatRequest(session_id=self.session_id))
            except BerthError as err:
                self.error = err
                if err.code != grpc.StatusCode.UNAVAILABLE:
                    return

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
