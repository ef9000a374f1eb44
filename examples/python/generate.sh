#!/usr/bin/env bash
# Generates the Python stubs (messages + gRPC) for client.py from ../../proto into ./gen.
#
# Debian packages, matched to each other (protobuf 3.21.12, gRPC 1.51.1):
#   apt-get install python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc
# protoc 3.21 knows proto3 `optional`; the python generator is built into protoc and
# grpc_python_plugin writes the service stubs. (Debian 12's python3-grpc-tools bundles protoc
# 3.5, which refuses `optional` fields, so it is not used; see docs/decisions.md.)
# The stubs are generated at run time (CI and the test do), not committed: gen/ is ignored.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto="$here/../../proto"
for tool in protoc grpc_python_plugin; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install protobuf-compiler protobuf-compiler-grpc" >&2; exit 2; }
done
rm -rf "$here/gen"
mkdir -p "$here/gen"
protoc -I "$proto" \
  --python_out="$here/gen" \
  --grpc_python_out="$here/gen" --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
  "$proto"/berth/v1/*.proto "$proto"/google/rpc/status.proto "$proto"/google/rpc/error_details.proto
# protoc emits absolute imports (berth.v1.types_pb2); with gen/ on sys.path they resolve as
# namespace packages, and gen/google/rpc merges with the system's google.protobuf (no __init__.py).
echo "generated $(find "$here/gen" -name '*_pb2*.py' | wc -l) modules into $here/gen"
