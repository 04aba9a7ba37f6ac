#!/usr/bin/env bash
# Starts N `trtllm serve` workers and the Shepherd Model Gateway (`smg`, from PyPI) in front of
# them, waits until the gateway answers chat completions, prints the OpenAI endpoint, and stops
# everything on Ctrl-C or when any process exits. See docs/scale-out.md.
#
#   scripts/cluster.sh                          # 2 built-in simulated workers, cache_aware routing
#   scripts/cluster.sh -n 4 --policy round_robin
#   scripts/cluster.sh -n 4 --model llama-3.1-8b --gpu h100-sxm     # a `trtllm sim build` engine
#   scripts/cluster.sh -n 2 --engine-dir /engines/llama-3.1-8b --tokenizer /models/Llama-3.1-8B-Instruct
#   scripts/cluster.sh -- --log-level debug     # arguments after `--` go to `smg launch`
set -euo pipefail

# The gateway release this script and the docs were checked with.
SMG_VERSION=1.13.0

usage() {
    cat <<'EOF'
Usage: scripts/cluster.sh [OPTIONS] [-- SMG_LAUNCH_ARGS...]

Workers:
  -n, --workers N            number of workers (default 2)
      --engine-dir DIR       engine directory every worker serves (default: the built-in simulated engine)
      --model PRESET         build a simulated engine from this model preset (`trtllm sim presets`)
      --gpu PRESET           GPU preset for --model (default h100-sxm)
      --tokenizer DIR        tokenizer directory for the workers and the gateway
      --worker-port PORT     gRPC port of the first worker; worker i listens on PORT+i (default 50051)
      --metrics-port PORT    Prometheus port of the first worker, PORT+i for worker i; 0 = off (default 9090)
      --worker-arg ARG       extra argument for every `trtllm serve` (repeatable)
      --trtllm PATH          trtllm binary (default: $TRTLLM, target/release/trtllm, target/debug/trtllm, PATH)
Gateway:
  -p, --policy POLICY        routing policy: cache_aware (default), round_robin, random, power_of_two,
                             least_load, prefix_hash, consistent_hashing
      --gateway-port PORT    OpenAI HTTP port (default 30000)
      --gateway-metrics-port PORT
                             the gateway's Prometheus port (default 29000)
      --smg PATH             an `smg` executable (default: smg==1.13.0 installed into --venv)
      --venv DIR             venv for smg (default target/smg-venv)
Common:
      --host HOST            address every process binds (default 127.0.0.1)
      --log-dir DIR          log files (default target/cluster)
      --ready-file FILE      write the OpenAI base URL to FILE once ready (for scripts)
      --timeout SECS         how long to wait for readiness (default 120)
  -h, --help
EOF
}

die() { echo "cluster.sh: $*" >&2; exit 2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
workers=2
policy=cache_aware
engine_dir=""
model=""
gpu=h100-sxm
tokenizer=""
worker_port=50051
metrics_port=9090
worker_args=()
trtllm="${TRTLLM:-}"
gateway_port=30000
gateway_metrics_port=29000
smg=""
venv="$root/target/smg-venv"
host=127.0.0.1
log_dir="$root/target/cluster"
ready_file=""
timeout=120
smg_args=()

while [ $# -gt 0 ]; do
    case "$1" in
        -n|--workers) workers="$2"; shift 2 ;;
        -p|--policy) policy="$2"; shift 2 ;;
        --engine-dir) engine_dir="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --gpu) gpu="$2"; shift 2 ;;
        --tokenizer) tokenizer="$2"; shift 2 ;;
        --worker-port) worker_port="$2"; shift 2 ;;
        --metrics-port) metrics_port="$2"; shift 2 ;;
        --worker-arg) worker_args+=("$2"); shift 2 ;;
        --trtllm) trtllm="$2"; shift 2 ;;
        --gateway-port) gateway_port="$2"; shift 2 ;;
        --gateway-metrics-port) gateway_metrics_port="$2"; shift 2 ;;
        --smg) smg="$2"; shift 2 ;;
        --venv) venv="$2"; shift 2 ;;
        --host) host="$2"; shift 2 ;;
        --log-dir) log_dir="$2"; shift 2 ;;
        --ready-file) ready_file="$2"; shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; smg_args=("$@"); break ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

[[ "$workers" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive integer, got '$workers'"
[ -z "$engine_dir" ] || [ -z "$model" ] || die "--engine-dir and --model exclude each other"
[ -z "$engine_dir" ] || [ -d "$engine_dir" ] || die "--engine-dir $engine_dir is not a directory"
[ -z "$tokenizer" ] || [ -d "$tokenizer" ] || die "--tokenizer $tokenizer is not a directory"
command -v curl >/dev/null || die "curl is needed to wait for the gateway"

# --- binaries -------------------------------------------------------------------------------
if [ -z "$trtllm" ]; then
    for candidate in "$root/target/release/trtllm" "$root/target/debug/trtllm"; do
        if [ -x "$candidate" ]; then trtllm="$candidate"; break; fi
    done
    [ -n "$trtllm" ] || trtllm="$(command -v trtllm || true)"
fi
[ -n "$trtllm" ] && [ -x "$trtllm" ] || die "no trtllm binary: build it (cargo build --release) or pass --trtllm PATH"

if [ -z "$smg" ]; then
    smg="$venv/bin/smg"
    installed="$("$venv/bin/python" -m pip show smg 2>/dev/null | sed -n 's/^Version: //p' || true)"
    if [ "$installed" != "$SMG_VERSION" ]; then
        echo "installing smg==$SMG_VERSION into $venv"
        [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || die "python3 -m venv $venv failed"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "smg==$SMG_VERSION" \
            || die "pip install smg==$SMG_VERSION failed (pass --smg PATH to use an installed gateway)"
    fi
fi
[ -x "$smg" ] || die "no smg executable at $smg"

mkdir -p "$log_dir"
log_dir="$(cd "$log_dir" && pwd)"

# --- cleanup --------------------------------------------------------------------------------
pids=()
names=()
cleanup() {
    trap - EXIT INT TERM
    [ ${#pids[@]} -gt 0 ] || return 0
    echo "stopping ${#pids[@]} processes"
    # The gateway first, so no new request reaches a draining worker; then the workers drain.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
    for _ in $(seq 1 80); do
        alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.5
    done
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -z "$ready_file" ] || rm -f "$ready_file"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Fails with the process's log when it has exited.
check_alive() {
    local pid="$1" name="$2" log="$3"
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "cluster.sh: $name exited early; last lines of $log:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
}

# --- engine ---------------------------------------------------------------------------------
if [ -n "$model" ]; then
    engine_dir="$log_dir/engine-$model-$gpu"
    "$trtllm" sim build --model "$model" --gpu "$gpu" --output "$engine_dir" >"$log_dir/sim-build.log" 2>&1 \
        || { cat "$log_dir/sim-build.log" >&2; die "trtllm sim build failed"; }
    # A preset engine ships no tokenizer: lend it the built-in one so that the gateway can template
    # and tokenize. Its ids lie inside the preset's vocabulary; generated ids beyond it decode to
    # nothing, so reply text is empty while token counts and timing are right.
    [ -n "$tokenizer" ] || tokenizer="$root/assets/sim-tokenizer"
fi
# The gateway tokenizes and applies the chat template itself. With local files it reads them;
# otherwise it fetches the tokenizer from a worker (GetTokenizer).
gateway_tokenizer="$tokenizer"
if [ -z "$gateway_tokenizer" ] && [ -z "$engine_dir" ]; then
    gateway_tokenizer="$root/assets/sim-tokenizer"
fi

# --- gateway address -------------------------------------------------------------------------
base="http://$host:$gateway_port"
# Something already answering there would pass the readiness checks below in our gateway's place.
if curl -s -o /dev/null -m 2 "$base/health"; then
    die "$base already answers: is another gateway running? (--gateway-port)"
fi

# --- workers --------------------------------------------------------------------------------
urls=()
for ((i = 0; i < workers; i++)); do
    port=$((worker_port + i))
    args=(serve --host "$host" --port "$port")
    [ -z "$engine_dir" ] || args+=(--engine-dir "$engine_dir")
    [ -z "$tokenizer" ] || args+=(--tokenizer "$tokenizer")
    [ "$metrics_port" = 0 ] || args+=(--metrics-port $((metrics_port + i)))
    log="$log_dir/worker-$i.log"
    "$trtllm" "${args[@]}" "${worker_args[@]}" >"$log" 2>&1 &
    pids+=($!)
    names+=("worker $i")
    urls+=("grpc://$host:$port")
done
deadline=$((SECONDS + timeout))
for ((i = 0; i < workers; i++)); do
    until grep -q '^listening on ' "$log_dir/worker-$i.log"; do
        check_alive "${pids[$i]}" "worker $i" "$log_dir/worker-$i.log"
        [ $SECONDS -lt $deadline ] || die "worker $i did not start within ${timeout}s (see $log_dir/worker-$i.log)"
        sleep 0.2
    done
done

# --- gateway --------------------------------------------------------------------------------
gateway=(launch --host "$host" --port "$gateway_port" --worker-urls "${urls[@]}" --policy "$policy"
    --prometheus-host "$host" --prometheus-port "$gateway_metrics_port" --shutdown-grace-period-secs 10)
if [ -n "$gateway_tokenizer" ]; then
    gateway+=(--tokenizer-path "$gateway_tokenizer")
else
    # A path that does not exist: the gateway then takes the tokenizer from a worker (GetTokenizer).
    gateway+=(--model-path "$log_dir/tokenizer-from-worker")
fi
"$smg" "${gateway[@]}" "${smg_args[@]}" >"$log_dir/gateway.log" 2>&1 &
pids+=($!)
names+=("gateway")
gateway_pid=$!

# Ready when every worker is healthy and a one-token chat completion succeeds (the tokenizer loads
# in the background after registration).
until curl -sf "$base/readiness" 2>/dev/null | grep -q "\"healthy_workers\":$workers,"; do
    check_alive "$gateway_pid" gateway "$log_dir/gateway.log"
    [ $SECONDS -lt $deadline ] || die "the gateway did not register $workers workers within ${timeout}s (see $log_dir/gateway.log)"
    sleep 0.5
done
model_id="$(curl -sf "$base/v1/models" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n 1)"
[ -n "$model_id" ] || die "the gateway lists no model at $base/v1/models"
until curl -sf -o /dev/null "$base/v1/chat/completions" -H 'content-type: application/json' \
    -d "{\"model\":\"$model_id\",\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}],\"max_tokens\":1}"; do
    check_alive "$gateway_pid" gateway "$log_dir/gateway.log"
    [ $SECONDS -lt $deadline ] || die "the gateway did not answer a chat completion within ${timeout}s (see $log_dir/gateway.log)"
    sleep 0.5
done

echo "OpenAI endpoint: $base/v1  (model \"$model_id\", policy $policy)"
echo "gateway metrics: http://$host:$gateway_metrics_port/metrics   workers: $base/workers   loads: $base/get_loads"
for ((i = 0; i < workers; i++)); do
    line="worker $i: ${urls[$i]}"
    [ "$metrics_port" = 0 ] || line+="  metrics http://$host:$((metrics_port + i))/metrics"
    echo "$line  log $log_dir/worker-$i.log"
done
echo "logs: $log_dir   (Ctrl-C stops everything)"
[ -z "$ready_file" ] || echo "$base/v1" >"$ready_file"

# Runs until Ctrl-C or until the gateway exits. A worker that exits is reported and left out: the
# gateway routes around it, which is what a failover experiment wants to watch.
reported=()
while kill -0 "$gateway_pid" 2>/dev/null; do
    live=("$gateway_pid")
    for ((i = 0; i < workers; i++)); do
        [[ " ${reported[*]} " == *" $i "* ]] || live+=("${pids[$i]}")
    done
    set +e
    wait -n "${live[@]}"
    set -e
    for ((i = 0; i < workers; i++)); do
        if ! kill -0 "${pids[$i]}" 2>/dev/null && [[ " ${reported[*]} " != *" $i "* ]]; then
            echo "cluster.sh: worker $i (${urls[$i]}) exited; the gateway routes around it" >&2
            reported+=("$i")
        fi
    done
done
echo "cluster.sh: the gateway exited; stopping the workers (see $log_dir/gateway.log)" >&2
exit 1
