#!/usr/bin/env bash
# Generates the Python stubs of berth_client (messages + gRPC services) from ../../proto into
# berth_client/_stubs (or into the directory given as $1). The output is committed;
# test/examples/python.test.ts generates into a scratch directory and fails when the committed
# stubs differ from what the protos give.
#
# Needs Debian's protoc and the gRPC Python plugin, matched to the runtime packages
# (protobuf 3.21.12, gRPC 1.51.1):
#   apt-get install protobuf-compiler protobuf-compiler-grpc      # to generate
#   apt-get install python3-grpcio python3-protobuf               # to use the client
# protobuf-compiler-grpc provides grpc_python_plugin; protoc 3.21 knows proto3 `optional` (the
# protoc bundled in Debian 12's python3-grpc-tools does not, so it is not used).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto="$here/../../proto"
out="${1:-$here/berth_client/_stubs}"
for tool in protoc grpc_python_plugin; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install protobuf-compiler protobuf-compiler-grpc" >&2; exit 2; }
done
rm -rf "$out"
mkdir -p "$out"
protoc -I "$proto" \
  --python_out="$out" \
  --grpc_python_out="$out" --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
  "$proto"/berth/v1/*.proto "$proto"/google/rpc/status.proto "$proto"/google/rpc/error_details.proto
# protoc emits absolute imports (berth.v1.types_pb2): berth_client puts _stubs on sys.path, where
# they resolve as namespace packages (google/rpc merges with the system's google.protobuf).
echo "generated $(find "$out" -name '*_pb2*.py' | wc -l) modules into $out"
