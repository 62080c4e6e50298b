#!/usr/bin/env bash
# Regenerates the checked-in Go code of every .proto file under internal/.
# Needs protoc, protoc-gen-go and protoc-gen-go-grpc on PATH (`make proto`
# adds $(go env GOPATH)/bin). Output lands next to each .proto file.
set -euo pipefail

cd "$(dirname "$0")/.."

for tool in protoc protoc-gen-go protoc-gen-go-grpc; do
	command -v "$tool" >/dev/null || { echo "genproto: $tool not found on PATH" >&2; exit 1; }
done

mapfile -t protos < <(find internal -name '*.proto' | sort)
if [ "${#protos[@]}" -eq 0 ]; then
	echo "genproto: no .proto files under internal/" >&2
	exit 0
fi

# -I . makes import paths repository-relative, so one proto can import
# another as "internal/…/x.proto"; paths=source_relative keeps output beside
# the source.
protoc -I . \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	"${protos[@]}"

for p in "${protos[@]}"; do
	echo "genproto: $p"
done
