#!/usr/bin/env bash
# The first run on a GPU, as one command, inside NVIDIA's TensorRT-LLM release container (1.1.x or
# 1.2.x): builds trtllm against the real library, runs `trtllm doctor`, builds a small engine (from
# --model-dir, or a small random-weight Llama made with trtllm-build, so nothing is downloaded),
# runs the conformance suite on it and a short `trtllm bench`, and writes ONE report file to attach
# to an issue. docs/real-gpu.md walks through it.
#
# Usage (from the repository root, inside the container):
#   scripts/gpu-check.sh [--model-dir HF_DIR] [--tokenizer DIR] [--engine-dir DIR] [--tp N] [--lora]
#                        [--dtype float16|bfloat16] [--out DIR]
#
#   --model-dir DIR   a Hugging Face Llama-family checkpoint to convert and build (default: a random
#                     2-layer Llama built from a config alone; its text is meaningless by design)
#   --engine-dir DIR  skip the engine build and use this engine (needs --tokenizer)
#   --tokenizer DIR   the tokenizer (default: --model-dir, or the repository's small sim tokenizer
#                     for the random Llama)
#   --tp N            tensor parallelism (default 1); N > 1 runs in orchestrator mode
#   --lora            build the engine with the LoRA plugin (q, k, v; rank 8) so the LoRA tests run
#   --out DIR         where the work and the report go (default: target/gpu-check)
set -uo pipefail

model_dir=""
engine_dir=""
tokenizer=""
tp=1
lora=0
dtype=float16
out=target/gpu-check

die() {
    echo "gpu-check: $*" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    --model-dir) model_dir=${2:?}; shift 2 ;;
    --engine-dir) engine_dir=${2:?}; shift 2 ;;
    --tokenizer) tokenizer=${2:?}; shift 2 ;;
    --tp) tp=${2:?}; shift 2 ;;
    --lora) lora=1; shift ;;
    --dtype) dtype=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
    esac
done

[ -f Cargo.toml ] && [ -d tests/conformance ] || die "run this from the trtllm repository root"
mkdir -p "$out"
out=$(cd "$out" && pwd)
report="$out/gpu-check-report.md"
: >"$report"
failures=0

# The release image keeps the executor headers, libraries and executorWorker under /app/tensorrt_llm
# (upstream docker/Dockerfile.multi, release stage).
export TRTLLM_ROOT=${TRTLLM_ROOT:-/app/tensorrt_llm}
export CUDA_INCLUDE_DIR=${CUDA_INCLUDE_DIR:-/usr/local/cuda/include}
worker="$TRTLLM_ROOT/bin/executorWorker"

section() {
    printf '\n## %s\n\n' "$1" >>"$report"
    echo "== $1"
}

# Runs a step, keeps its whole log in $out/logs, and puts its status and last lines in the report.
step() {
    local name=$1
    shift
    local log
    log="$out/logs/$(echo "$name" | tr ' /' '__').log"
    mkdir -p "$out/logs"
    local started=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    local took=$((SECONDS - started))
    if [ "$rc" -eq 0 ]; then
        printf -- '- **%s**: ok (%ss)\n' "$name" "$took" >>"$report"
    else
        failures=$((failures + 1))
        {
            printf -- '- **%s**: FAILED, exit %s (%ss); last lines of %s:\n\n```\n' "$name" "$rc" "$took" "$log"
            tail -n 60 "$log"
            printf '```\n'
        } >>"$report"
    fi
    echo "   $name: exit $rc (${took}s)"
    return "$rc"
}

section "Environment"
{
    echo '```'
    echo "date: $(date -u +%FT%TZ)"
    echo "trtllm commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "TRTLLM_ROOT: $TRTLLM_ROOT"
    echo "TRT_LLM_VERSION (image): ${TRT_LLM_VERSION:-unset}  TRT_LLM_GIT_COMMIT: ${TRT_LLM_GIT_COMMIT:-unset}"
    echo "CUDA_VERSION: ${CUDA_VERSION:-unset}"
    pip show tensorrt_llm 2>/dev/null | grep -E '^(Name|Version|Location):'
    nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv 2>&1
    ls -l "$TRTLLM_ROOT/lib/libtensorrt_llm.so" "$TRTLLM_ROOT/lib/libnvinfer_plugin_tensorrt_llm.so" "$worker" 2>&1
    # Read as upstream's executor examples read it (examples/cpp/executor/CMakeLists.txt).
    if nm -f posix -D "$TRTLLM_ROOT/lib/libtensorrt_llm.so" >"$out/nm.txt" 2>/dev/null; then
        echo "C++ ABI of libtensorrt_llm.so (_GLIBCXX_USE_CXX11_ABI): $(grep -q __cxx11 "$out/nm.txt" && echo 1 || echo 0)"
    else
        echo "C++ ABI of libtensorrt_llm.so: unknown (no library or no nm)"
    fi
    mpirun --version 2>&1 | head -n 1
    cargo --version 2>&1
    echo '```'
} >>"$report"
[ -f "$TRTLLM_ROOT/include/tensorrt_llm/executor/executor.h" ] ||
    die "no $TRTLLM_ROOT/include/tensorrt_llm/executor/executor.h: run inside nvcr.io/nvidia/tensorrt-llm/release:<1.1.x|1.2.x> or set TRTLLM_ROOT"
command -v cargo >/dev/null || die "no cargo: install Rust (curl -sSf https://sh.rustup.rs | sh -s -- -y) or use docker/Dockerfile"

section "Build against the real library"
step "cargo build --release" cargo build --release --locked || die "the build failed: see $report"
step "build the conformance suite" cargo test --release --locked --test conformance --no-run || die "see $report"
trtllm=target/release/trtllm

section "Engine"
if [ -z "$engine_dir" ]; then
    engine_dir="$out/engine-tp$tp"
    ckpt="$out/checkpoint-tp$tp"
    # Paged context attention, so that KV blocks are reused and reported (upstream
    # docs/source/advanced/kv-cache-reuse.md); beams up to 4 for the suite's beam test.
    build_args=(--output_dir "$engine_dir" --max_batch_size 16 --max_input_len 1024 --max_seq_len 2048
        --max_num_tokens 4096 --max_beam_width 4 --gemm_plugin auto --use_paged_context_fmha enable
        --workers "$tp")
    if [ "$lora" = 1 ]; then
        build_args+=(--lora_plugin auto --lora_target_modules attn_q attn_k attn_v --max_lora_rank 8)
    fi
    if [ -n "$model_dir" ]; then
        tokenizer=${tokenizer:-$model_dir}
        convert=$(find "$TRTLLM_ROOT/examples" -path '*llama/convert_checkpoint.py' | head -n 1)
        [ -n "$convert" ] || die "no llama convert_checkpoint.py under $TRTLLM_ROOT/examples"
        step "convert $model_dir" python3 "$convert" --model_dir "$model_dir" --output_dir "$ckpt" \
            --dtype "$dtype" --tp_size "$tp" || die "see $report"
        step "trtllm-build" trtllm-build --checkpoint_dir "$ckpt" "${build_args[@]}" || die "see $report"
    else
        # No checkpoint: trtllm-build --model_config builds the model class from its config alone
        # (tensorrt_llm/commands/build.py: without --checkpoint_dir the weights are not loaded).
        tokenizer=${tokenizer:-$PWD/assets/sim-tokenizer}
        vocab=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['model']['vocab']))" "$tokenizer/tokenizer.json")
        mkdir -p "$ckpt"
        cat >"$ckpt/config.json" <<JSON
{
  "architecture": "LlamaForCausalLM",
  "dtype": "$dtype",
  "logits_dtype": "float32",
  "vocab_size": $vocab,
  "max_position_embeddings": 2048,
  "hidden_size": 256,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 4,
  "head_size": 64,
  "intermediate_size": 512,
  "norm_epsilon": 1e-05,
  "position_embedding_type": "rope_gpt_neox",
  "hidden_act": "silu",
  "rotary_base": 10000.0,
  "quantization": {"quant_algo": null, "kv_cache_quant_algo": null},
  "mapping": {"world_size": $tp, "tp_size": $tp, "pp_size": 1}
}
JSON
        step "trtllm-build (random-weight Llama)" trtllm-build --model_config "$ckpt/config.json" "${build_args[@]}" ||
            die "see $report"
    fi
fi
[ -n "$tokenizer" ] || die "--engine-dir needs --tokenizer"
{
    printf -- '- engine: %s, tokenizer: %s, tp %s\n\n```json\n' "$engine_dir" "$tokenizer" "$tp"
    head -c 4000 "$engine_dir/config.json"
    printf '\n```\n'
} >>"$report"

multi=()
if [ "$tp" -gt 1 ]; then
    devices=$(seq -s, 0 $((tp - 1)))
    multi=(--orchestrator --worker-executable "$worker" --device-ids "$devices")
    export TRTLLM_TEST_ORCHESTRATOR=1 TRTLLM_TEST_WORKER_EXECUTABLE="$worker" TRTLLM_TEST_DEVICE_IDS="$devices"
    # The orchestrator spawns its workers through Open MPI, which refuses to run as root unless told.
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
fi

section "trtllm doctor"
step "trtllm doctor" "$trtllm" doctor --engine-dir "$engine_dir" --tokenizer "$tokenizer" --json "$out/doctor.json" "${multi[@]}"
{
    echo '```'
    cat "$out/logs/trtllm_doctor.log"
    echo '```'
} >>"$report"

section "Conformance suite"
# The gRPC test drives the server with the smg-grpc-proto stubs from PyPI in a venv
# (tests/common/python.rs); without venv support it would fail for a reason unrelated to the GPU.
if [ -z "${TRTLLM_PY:-}" ] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    export TRTLLM_SKIP_PY_TESTS=1
    echo "- python3 cannot make a venv (apt-get install python3-venv): the gRPC stub test is skipped" >>"$report"
fi
TRTLLM_TEST_ENGINE_DIR="$engine_dir" TRTLLM_TEST_TOKENIZER="$tokenizer" \
    step "conformance" cargo test --release --locked --test conformance -- --nocapture --test-threads 4
{
    echo '```'
    grep -E '^(conformance target|SKIPPED|test |test result)' "$out/logs/conformance.log"
    echo '```'
} >>"$report"

section "trtllm bench"
if [ "$tp" -eq 1 ]; then
    step "trtllm bench" "$trtllm" bench --engine-dir "$engine_dir" --tokenizer "$tokenizer" --input-len 256 \
        --output-len 64 --concurrency 1,4 --output-dir "$out/bench"
    {
        echo '```'
        tail -n 40 "$out/logs/trtllm_bench.log"
        echo '```'
    } >>"$report"
else
    echo "- skipped: \`trtllm bench\` has no multi-GPU flags yet (serve has --orchestrator)" >>"$report"
fi

section "Summary"
if [ "$failures" -eq 0 ]; then
    echo "Every step passed." >>"$report"
else
    echo "$failures step(s) failed; their last lines are above, the whole logs in $out/logs." >>"$report"
fi
echo "report: $report"
[ "$failures" -eq 0 ]
