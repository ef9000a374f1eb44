#!/usr/bin/python3
"""A Berth agent in Python, over gRPC, with the berth_client package (clients/python).

    /usr/bin/python3 client.py --server 127.0.0.1:50051

Registers a repository, opens a workspace, writes a file, strands the session (and shows the
SESSION_STRANDED error a stranded session answers), resumes it under a new session id, reads
the file back, then watches the repository's events from after_seq=0 until it has seen the
resume, and cancels the stream. Prints each step; exits 1 on any unexpected result.
"""
import argparse
import os
import sys
import uuid

# The package from this checkout (or `pip install ./clients/python`).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

import grpc  # noqa: E402
from berth_client import BerthError, Client, types as types_pb2, ws  # noqa: E402


class Unexpected(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise Unexpected(what)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BERTH_GRPC", "127.0.0.1:50051"), help="gRPC host:port (default 127.0.0.1:50051)")
    parser.add_argument("--token", default=os.environ.get("BERTH_TOKEN"), help="bearer token when the server has auth on")
    args = parser.parse_args()

    agent = "py-agent-" + uuid.uuid4().hex[:8]
    with Client(args.server, token=args.token) as berth:
        grpc.channel_ready_future(berth.channel).result(timeout=10)

        name = "py-demo-" + uuid.uuid4().hex[:8]
        repo = berth.call("RegisterRepository", ws.RegisterRepositoryRequest(name=name, request_id=name)).repository
        again = berth.call("RegisterRepository", ws.RegisterRepositoryRequest(name=name, request_id=name)).repository
        expect(again.id == repo.id, "a retried RegisterRepository with the same request_id answers the same repository")
        print(f"registered repository {repo.name} ({repo.id})")

        created = berth.call(
            "CreateWorkspace",
            ws.CreateWorkspaceRequest(repo_id=repo.id, base_commit="main", mode=types_pb2.WORKSPACE_MODE_EPHEMERAL, agent_id=agent, intent="a python example"),
        ).workspace
        expect(created.changeset_state == types_pb2.CHANGESET_STATE_DRAFT, f"new changeset is DRAFT, got {created.changeset_state}")
        print(f"opened workspace {created.workspace_id}: session {created.session_id}, agent name {created.agent_name}")

        content = b"print('hello from python')\n"
        with berth.heartbeating(created.session_id) as beat:
            written = berth.call("WriteFile", ws.WriteFileRequest(session_id=created.session_id, path="hello.py", content=content))
        expect(beat.error is None, f"heartbeats answered ({beat.error})")
        expect(written.new_hash != "", "WriteFile returns the new hash")
        print(f"wrote hello.py ({len(content)} bytes, hash {written.new_hash[:12]}…) while heartbeating")

        stranded = berth.call("StrandSession", ws.StrandSessionRequest(session_id=created.session_id, reason="python example")).workspace
        expect(stranded.lifecycle_state == types_pb2.LIFECYCLE_STATE_STRANDED, f"stranded, got lifecycle {stranded.lifecycle_state}")
        print(f"stranded session {created.session_id}")

        try:
            berth.call("ReadFile", ws.ReadFileRequest(session_id=created.session_id, path="hello.py"))
            raise Unexpected("a stranded session must not read files")
        except BerthError as err:
            expect(err.code == grpc.StatusCode.FAILED_PRECONDITION, f"FAILED_PRECONDITION, got {err.code}")
            expect(err.reason == "SESSION_STRANDED", f"ErrorInfo SESSION_STRANDED, got {err.reason}")
            print(f"  a stranded session answers {err.code.name} {err.reason} (stranded_at {err.metadata['stranded_at']})")

        resumed = berth.call("ResumeSession", ws.ResumeSessionRequest(dead_session_id=created.session_id, agent_id=agent))
        expect(resumed.workspace.workspace_id == created.workspace_id, "resume keeps the workspace id")
        expect(resumed.new_session_id not in ("", created.session_id), "resume mints a new session id")
        expect(resumed.workspace.lifecycle_state == types_pb2.LIFECYCLE_STATE_ACTIVE, "resumed workspace is active")
        print(f"resumed as session {resumed.new_session_id} (same workspace)")

        read = berth.call("ReadFile", ws.ReadFileRequest(session_id=resumed.new_session_id, path="hello.py"))
        expect(read.content == content, "the resumed session reads what was written")
        print("read hello.py back through the resumed session")

        print("watching the repository's events from after_seq=0:")
        kinds = []
        last_seq = 0
        for event in berth.events(after_seq=0, repo_ids=[repo.id], idle_timeout=15):
            expect(event.seq > last_seq, f"seq increases ({event.seq} after {last_seq})")
            last_seq = event.seq
            kinds.append(event.kind)
            print(f"  seq {event.seq}: {event.kind} session={event.session_id or '-'} reason={event.reason or '-'}")
            if event.kind == "session.resumed":
                break
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
    except BerthError as e:
        print(f"UNEXPECTED RPC failure: {e}", file=sys.stderr)
        sys.exit(1)
    except grpc.FutureTimeoutError:
        print("UNEXPECTED: the server did not answer within 10 s", file=sys.stderr)
        sys.exit(1)
