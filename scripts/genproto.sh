#!/usr/bin/env bash
# Regenerates the checked-in Go code of every .proto file under internal/,
# next to each file. It compiles them with buf (a Go program: no protoc
# needed) and the protoc-gen-go and protoc-gen-go-grpc plugins, each
# installed into $(go env GOPATH)/bin at the pinned version when missing.
set -euo pipefail

cd "$(dirname "$0")/.."

BUF_VERSION=v1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.5.1

gobin=$(go env GOPATH)/bin
export PATH=$gobin:$PATH
need() { # need TOOL MODULE@VERSION
	command -v "$1" >/dev/null || GOFLAGS=-mod=mod go install "$2"
}
need buf github.com/bufbuild/buf/cmd/buf@$BUF_VERSION
need protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION
need protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION

mapfile -t protos < <(find internal -name '*.proto' | sort)
if [ "${#protos[@]}" -eq 0 ]; then
	echo "genproto: no .proto files under internal/" >&2
	exit 0
fi

# The repository root is the module root, so one proto can import another
# as "internal/…/x.proto"; paths=source_relative keeps output beside the
# source (buf.gen.yaml).
args=()
for p in "${protos[@]}"; do
	args+=(--path "$p")
done
buf generate --template buf.gen.yaml "${args[@]}"

for p in "${protos[@]}"; do
	echo "genproto: $p"
done
