#!/usr/bin/env bash
# Measures the sandbox from a built binary:
#   1. time from process start until the sandbox answers API requests (seed preset);
#   2. resident memory with 1,000 simulated nodes (8 GPUs each), after it settles,
#      then again with 4,000 one-GPU pods bound to them and Running.
# Usage, from the repository root:  internal/sandbox/measure.sh [path/to/muster]
# Without an argument it builds ./cmd/muster to /tmp/muster first. Needs curl.
set -euo pipefail

bin=${1:-}
if [[ -z $bin ]]; then
	bin=/tmp/muster
	go build -o "$bin" ./cmd/muster
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }

# start_sandbox ARGS...: starts the sandbox in the background; sets pid and kc.
start_sandbox() {
	kc=$work/kubeconfig-$RANDOM
	"$bin" sandbox --kubeconfig-out "$kc" "$@" >"$work/out" 2>&1 &
	pid=$!
}

# wait_ready: waits until the kubeconfig exists and GET /api/v1/nodes answers 200.
# It exports what curl needs to reach the API server: URL, TOKEN, CA, RESOLVE.
wait_ready() {
	local server port
	for _ in $(seq 1 600); do
		[[ -s $kc ]] && break
		kill -0 "$pid" 2>/dev/null || { cat "$work/out"; echo "sandbox exited" >&2; exit 1; }
		sleep 0.05
	done
	server=$(awk '/server:/ {print $2}' "$kc")
	port=${server##*:}
	export TOKEN CA="$work/ca.crt" RESOLVE="apiserver-loopback-client:$port:127.0.0.1"
	export URL="https://apiserver-loopback-client:$port"
	TOKEN=$(awk '/token:/ {print $2}' "$kc")
	awk '/certificate-authority-data:/ {print $2}' "$kc" | base64 -d >"$CA"
	until [[ $(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" --resolve "$RESOLVE" \
		-H "Authorization: Bearer $TOKEN" "$URL/api/v1/nodes?limit=1") == 200 ]]; do
		sleep 0.05
	done
}

# api_get PATH: prints the body of GET PATH.
api_get() {
	curl -sf --cacert "$CA" --resolve "$RESOLVE" -H "Authorization: Bearer $TOKEN" "$URL$1"
}

# stop_sandbox: SIGINT, then waits; prints the exit status.
stop_sandbox() {
	kill -INT "$pid"
	local status=0
	wait "$pid" || status=$?
	echo "  stopped on SIGINT, exit status $status"
}

echo "== start-up (preset seed, 8 nodes)"
for run in 1 2 3; do
	t0=$(now)
	start_sandbox --preset seed
	wait_ready
	t1=$(now)
	printf '  run %d: answering API requests after %.2f s\n' "$run" "$(echo "$t1 - $t0" | bc)"
	stop_sandbox
done

echo "== memory with 1,000 nodes"
cat >"$work/cluster.yaml" <<'YAML'
pools:
- name: node
  count: 1000
  cpu: "96"
  memory: 1Ti
  gpus: 8
  gpuProduct: NVIDIA-H100-80GB-HBM3
  racks: 25
YAML
t0=$(now)
start_sandbox --cluster "$work/cluster.yaml"
wait_ready
t1=$(now)
printf '  answering API requests with 1,000 nodes after %.2f s\n' "$(echo "$t1 - $t0" | bc)"
sleep 10
grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | awk '{printf "  %s %.0f MiB\n", $1, $2/1024}'

echo "== memory with 1,000 nodes and 4,000 Running pods"
t0=$(now)
# shellcheck disable=SC2016 # expanded by the inner shell
seq 0 3999 | xargs -P 8 -I{} sh -c 'printf "%s" "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p$1\"},\"spec\":{\"nodeName\":\"node-$(($1 % 1000))\",\"containers\":[{\"name\":\"c\",\"image\":\"img\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}" |
	curl -sf -o /dev/null --cacert "$CA" --resolve "$RESOLVE" -H "Authorization: Bearer $TOKEN" \
		-H "Content-Type: application/json" --data @- "$URL/api/v1/namespaces/default/pods"' _ {}
running=0
for _ in $(seq 1 600); do
	running=$(api_get "/api/v1/namespaces/default/pods?fieldSelector=status.phase%3DRunning" | grep -Eo '"phase": ?"Running"' | wc -l)
	[[ $running -eq 4000 ]] && break
	sleep 0.5
done
[[ $running -eq 4000 ]] || { echo "expected 4000 Running pods, found $running" >&2; stop_sandbox; exit 1; }
t1=$(now)
printf '  4,000 pods created (8 parallel clients) and Running after %.1f s\n' "$(echo "$t1 - $t0" | bc)"
sleep 5
grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | awk '{printf "  %s %.0f MiB\n", $1, $2/1024}'
stop_sandbox
