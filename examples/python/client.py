#!/usr/bin/python3
"""A Berth agent in Python, over gRPC, with stubs generated from proto/ (./generate.sh).

    ./generate.sh && /usr/bin/python3 client.py --server 127.0.0.1:50051

Registers a repository, opens a workspace, writes a file, strands the session (and shows the
SESSION_STRANDED error a stranded session answers), resumes it under a new session id, reads
the file back, then watches the repository's events from after_seq=0 until it has seen the
resume, and cancels the stream. Prints each step; exits 1 on any unexpected result.
"""
import argparse
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

import grpc  # noqa: E402
from berth.v1 import types_pb2, workspace_service_pb2 as ws, workspace_service_pb2_grpc as ws_grpc  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402


class Unexpected(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise Unexpected(what)


def error_info(err):
    """The google.rpc.ErrorInfo of a failed call (grpc-status-details-bin), or None."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return info
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BERTH_GRPC", "127.0.0.1:50051"), help="gRPC host:port (default 127.0.0.1:50051)")
    parser.add_argument("--token", default=os.environ.get("BERTH_TOKEN"), help="bearer token when the server has auth on")
    args = parser.parse_args()

    metadata = (("authorization", "Bearer " + args.token),) if args.token else ()
    agent = "py-agent-" + uuid.uuid4().hex[:8]
    with grpc.insecure_channel(args.server) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        stub = ws_grpc.WorkspaceServiceStub(channel)

        repo = stub.RegisterRepository(ws.RegisterRepositoryRequest(name="py-demo-" + uuid.uuid4().hex[:8]), metadata=metadata, timeout=10).repository
        print(f"registered repository {repo.name} ({repo.id})")

        created = stub.CreateWorkspace(
            ws.CreateWorkspaceRequest(repo_id=repo.id, base_commit="main", mode=types_pb2.WORKSPACE_MODE_EPHEMERAL, agent_id=agent, intent="a python example"),
            metadata=metadata,
            timeout=10,
        ).workspace
        expect(created.changeset_state == types_pb2.CHANGESET_STATE_DRAFT, f"new changeset is DRAFT, got {created.changeset_state}")
        print(f"opened workspace {created.workspace_id}: session {created.session_id}, agent name {created.agent_name}")

        content = b"print('hello from python')\n"
        written = stub.WriteFile(ws.WriteFileRequest(session_id=created.session_id, path="hello.py", content=content), metadata=metadata, timeout=10)
        expect(written.new_hash != "", "WriteFile returns the new hash")
        print(f"wrote hello.py ({len(content)} bytes, hash {written.new_hash[:12]}…)")

        stranded = stub.StrandSession(ws.StrandSessionRequest(session_id=created.session_id, reason="python example"), metadata=metadata, timeout=10).workspace
        expect(stranded.lifecycle_state == types_pb2.LIFECYCLE_STATE_STRANDED, f"stranded, got lifecycle {stranded.lifecycle_state}")
        print(f"stranded session {created.session_id}")

        try:
            stub.ReadFile(ws.ReadFileRequest(session_id=created.session_id, path="hello.py"), metadata=metadata, timeout=10)
            raise Unexpected("a stranded session must not read files")
        except grpc.RpcError as err:
            info = error_info(err)
            expect(err.code() == grpc.StatusCode.FAILED_PRECONDITION, f"FAILED_PRECONDITION, got {err.code()}")
            expect(info is not None and info.reason == "SESSION_STRANDED" and info.domain == "berth", f"ErrorInfo SESSION_STRANDED, got {info}")
            print(f"  a stranded session answers {err.code().name} {info.reason} (stranded_at {info.metadata['stranded_at']})")

        resumed = stub.ResumeSession(ws.ResumeSessionRequest(dead_session_id=created.session_id, agent_id=agent), metadata=metadata, timeout=10)
        expect(resumed.workspace.workspace_id == created.workspace_id, "resume keeps the workspace id")
        expect(resumed.new_session_id not in ("", created.session_id), "resume mints a new session id")
        expect(resumed.workspace.lifecycle_state == types_pb2.LIFECYCLE_STATE_ACTIVE, "resumed workspace is active")
        print(f"resumed as session {resumed.new_session_id} (same workspace)")

        read = stub.ReadFile(ws.ReadFileRequest(session_id=resumed.new_session_id, path="hello.py"), metadata=metadata, timeout=10)
        expect(read.content == content, "the resumed session reads what was written")
        print("read hello.py back through the resumed session")

        print("watching the repository's events from after_seq=0:")
        stream = stub.WatchEvents(ws.WatchEventsRequest(after_seq=0, repo_ids=[repo.id]), metadata=metadata, timeout=15)
        kinds = []
        last_seq = 0
        try:
            for response in stream:
                event = response.event
                expect(event.seq > last_seq, f"seq increases ({event.seq} after {last_seq})")
                last_seq = event.seq
                kinds.append(event.kind)
                print(f"  seq {event.seq}: {event.kind} session={event.session_id or '-'} reason={event.reason or '-'}")
                if event.kind == "session.resumed":
                    break
        finally:
            stream.cancel()
        for kind in ("session.created", "session.stranded", "session.resumed"):
            expect(kind in kinds, f"saw {kind} (saw {kinds})")
        expect(kinds.index("session.created") < kinds.index("session.stranded") < kinds.index("session.resumed"), "events in commit order")
        print(f"saw {len(kinds)} events in order, then cancelled the stream")
    print("OK")


if __name__ == "__main__":
    try:
        main()
    except Unexpected as e:
        print(f"UNEXPECTED: {e}", file=sys.stderr)
        sys.exit(1)
    except grpc.RpcError as e:
        print(f"UNEXPECTED RPC failure: {e.code().name}: {e.details()}", file=sys.stderr)
        sys.exit(1)
    except grpc.FutureTimeoutError:
        print("UNEXPECTED: the server did not answer within 10 s", file=sys.stderr)
        sys.exit(1)
