#!/usr/bin/env bash
# Compiles and runs the real-TensorRT-LLM code path without TensorRT-LLM: build.rs's TRTLLM_ROOT branch, the
# `cfg(trtllm_real)` Rust and the shim's TRTLLM_SHIM_REAL C++ (docs/real-gpu.md, "What CI proves without a GPU").
#   1. stand-in: a stand-in install in the layout TRTLLM_ROOT expects (include/, lib/), under target/real-mode/:
#      include/ holds the simulated headers (cpp/sim/include), lib/libtensorrt_llm.so the simulated executor built
#      without the Rust bridges (the C++ timing stand-in, cpp/standin/engine_description.cpp describing the
#      engine), lib/libnvinfer_plugin_tensorrt_llm.so the plugin library's one symbol. System C++ compiler, no
#      warnings allowed.
#   2. crate: the crate built in real mode against it, linted like CI's build (the library, the binary and one
#      test) and failing on any warning. The `_real-mode-check` feature (which enables nothing) gives the
#      real-mode crate its own artifacts beside the simulated build's in the same target directory, so that every
#      dependency is shared and neither build undoes the other.
#   3. run: `trtllm --version`, `trtllm doctor`, one generation and one disaggregated bench (context-only and
#      generation-only requests, the handoff through the shim's real-mode ContextPhaseParams code) through that
#      binary.
# Usage: scripts/real-mode-check.sh [stand-in|crate|run]   (all three by default; prints the seconds each took)
# scripts/test.sh runs the stages apart: the stand-in's C++ while Rust compiles, the run while the tests run. The
# crate stage replaces target/debug/trtllm for a moment, so it must not overlap tests that start that binary.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target/real-mode"
work=$(cd "$target/real-mode" && pwd)
root="$work/tensorrt_llm"
cxx=${CXX:-c++}
flags=(-std=c++17 -O1 -fPIC -pthread -Wall -Wextra -Werror)
started=$SECONDS
stage() { echo "real-mode check: $1 ($((SECONDS - started)) s)"; }

# 1. The stand-in install.
build_stand_in() {
rm -rf "$root"
mkdir -p "$root/lib" "$work/objects"
cp -R cpp/sim/include "$root/include"
# The simulator's sources (build.rs's configure_simulated compiles the same list) and the engine description.
mapfile -t sources < <(find cpp/sim/src cpp/sim/include -name '*.cpp' | sort)
sources+=(cpp/standin/engine_description.cpp)
objects=()
for source in "${sources[@]}"; do objects+=("$work/objects/$(echo "$source" | tr / _).o"); done
# Compiled as many at a time as there are cores; an object newer than its source and every header is kept.
compile_one() {
    local source=$1 object=$2
    if [ "$object" -nt "$source" ] && [ -z "$(find cpp/sim cpp/standin -name '*.h' -newer "$object")" ]; then
        return 0
    fi
    "$cxx" "${flags[@]}" -I cpp/sim/include -I cpp/sim/src -c "$source" -o "$object"
}
export -f compile_one
export cxx
export flags_text="${flags[*]}"
for i in "${!sources[@]}"; do printf '%s\0%s\0' "${sources[$i]}" "${objects[$i]}"; done |
    xargs -0 -n 2 -P "$(nproc)" bash -c 'flags=($flags_text); compile_one "$1" "$2"' _
"$cxx" -shared -pthread -Wl,-soname,libtensorrt_llm.so -o "$root/lib/libtensorrt_llm.so" "${objects[@]}"
"$cxx" "${flags[@]}" -shared -Wl,-soname,libnvinfer_plugin_tensorrt_llm.so cpp/standin/plugins.cpp \
    -L "$root/lib" -ltensorrt_llm -o "$root/lib/libnvinfer_plugin_tensorrt_llm.so"
stage "stand-in libraries built in $root/lib"
}

# 2. The crate in real mode, with CI's lints (scripts/test.sh sets the same wrapper).
build_crate() {
[ -e "$root/lib/libtensorrt_llm.so" ] || { echo "real-mode check: no stand-in library: run the stand-in stage first" >&2; exit 1; }
# Cargo links the binary it built last to target/debug/trtllm: note the simulated one's original to put it back.
uplifted="$target/debug/trtllm"
simulated=""
[ -e "$uplifted" ] && simulated=$(find "$target/debug/deps" -maxdepth 1 -samefile "$uplifted" | head -n 1)
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$clippy_driver" ] || clippy_driver="$(command -v clippy-driver || true)"
[ -n "$clippy_driver" ] || { echo "clippy is not installed: rustup component add clippy" >&2; exit 1; }
# Built as `cargo test` builds it (for an integration test, here the smallest, which brings the binary), so that
# the dependencies get the features the test build unified and are shared with it rather than compiled again;
# RUSTFLAGS are left as they are for the same reason (any change would compile every dependency again), so
# warnings are caught from the log instead of denied by `-D warnings`.
RUSTC_WORKSPACE_WRAPPER="$clippy_driver" \
    TRTLLM_ROOT="$root" cargo test --no-run --locked --test ffi_memcheck --features _real-mode-check \
    --message-format json-render-diagnostics >"$work/cargo-messages.json" 2>"$work/cargo-build.log" ||
    { cat "$work/cargo-build.log" >&2; exit 1; }
if grep -q '^warning' "$work/cargo-build.log"; then
    cat "$work/cargo-build.log" >&2
    echo "real-mode check FAILED: the real-mode build has warnings (above)" >&2
    exit 1
fi
built=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "trtllm" \
            and message.get("executable"):
        print(message["executable"])' "$work/cargo-messages.json" | tail -n 1)
[ -n "$built" ] || { echo "real-mode check: cargo reported no trtllm binary" >&2; exit 1; }
# The shim's C++ warnings reach cargo only as build-script warnings, which do not fail a build: fail on them here.
out_dir=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    message = json.loads(line)
    if message.get("reason") == "build-script-executed" and "#trtllm@" in message["package_id"]:
        print(message["out_dir"])' "$work/cargo-messages.json" | tail -n 1)
[ -n "$out_dir" ] || { echo "real-mode check: cargo reported no build-script run for trtllm" >&2; exit 1; }
if grep -q '^cargo:warning=' "$out_dir/../output"; then
    grep '^cargo:warning=' "$out_dir/../output" >&2
    echo "real-mode check FAILED: the real-mode build of the shim has warnings" >&2
    exit 1
fi
trtllm="$work/trtllm"
cp "$built" "$trtllm"
if [ -n "$simulated" ]; then ln -f "$simulated" "$uplifted"; fi
stage "crate built in real mode ($trtllm)"
}

# 3. Run it. The binary finds the stand-in libraries through the rpath build.rs sets.
run_binary() {
trtllm="$work/trtllm"
[ -x "$trtllm" ] || { echo "real-mode check: no real-mode binary: run the crate stage first" >&2; exit 1; }
fail() { echo "real-mode check FAILED: $1" >&2; exit 1; }
version=$("$trtllm" --version)
echo "$version"
case "$version" in *tensorrt-llm*) ;; *) fail "--version does not name the tensorrt-llm backend: $version" ;; esac

engine="$work/engine"
rm -rf "$engine"
"$trtllm" sim build --model tinyllama-1.1b --gpu rtx-a6000 --output "$engine" >/dev/null
export TRTLLM_STANDIN_ENGINE_DIR="$engine"
tokenizer=assets/sim-tokenizer

# The doctor's GPU checks read `nvidia-smi` and the engine's rank<N>.engine files: a stand-in nvidia-smi lists one
# GPU and the engine directory gets an empty rank0.engine (the stand-in library reads neither), so that every check
# runs, the smoke request through the real-mode executor included, and the doctor must pass.
mkdir -p "$work/bin"
printf '%s\n' '#!/bin/sh' \
    '# The real-mode check'"'"'s stand-in: one GPU, in the --query-gpu CSV the doctor asks for.' \
    'echo "0, stand-in GPU (scripts/real-mode-check.sh), 81559 MiB, 0.0, 9.0"' >"$work/bin/nvidia-smi"
chmod +x "$work/bin/nvidia-smi"
touch "$engine/rank0.engine"
PATH="$work/bin:$PATH" "$trtllm" doctor --engine-dir "$engine" --tokenizer "$tokenizer" \
    --json "$work/doctor.json" || fail "trtllm doctor failed (report above)"
python3 - "$work/doctor.json" "$root/lib" <<'EOF'
import json, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
problems = []
def expect(name, contains=""):
    check = checks.get(name)
    if check is None or check["status"] != "ok" or contains not in json.dumps(check):
        problems.append(f"{name}: expected ok with {contains!r}, got {json.dumps(check)}")
expect("backend", "tensorrt-llm")
expect("libraries", sys.argv[2] + "/libtensorrt_llm.so")
expect("plugins", sys.argv[2] + "/libnvinfer_plugin_tensorrt_llm.so")
expect("cuda", "stand-in GPU")
expect("engine")
expect("tokenizer")
expect("smoke test")
if problems:
    sys.exit("real-mode check FAILED: doctor:\n  " + "\n  ".join(problems))
EOF
stage "doctor ran in real mode"

"$trtllm" generate --engine-dir "$engine" --tokenizer "$tokenizer" --max-tokens 8 --ignore-eos "Hello" \
    >"$work/generated.txt" 2>"$work/generate.log" || { cat "$work/generate.log" >&2; fail "trtllm generate failed"; }
cat "$work/generate.log"
[ -s "$work/generated.txt" ] || fail "generate printed no text"
grep -q "completion tokens 8," "$work/generate.log" || fail "generate did not report 8 completion tokens"
stage "one generation in real mode"

# Disaggregated prefill and decode through the real-mode shim: context-only requests on one executor, their
# ContextPhaseParams serialized and deserialized by the shim's real-mode code, generation-only requests on another.
# The stand-in library times each transfer as 1 ms (cpp/sim/src/transfer_model.cpp without the Rust bridge): the
# check is that every request completes on both legs with the split recorded and the greedy tokens equal to an
# aggregated run's, not the figures.
# The stand-in library's vocabulary is the shipped tokenizer's (cpp/standin/engine_description.cpp), smaller than
# config.json's, so the prompts are token ids inside it.
python3 -c '
import json
for i in range(4):
    print(json.dumps({"prompt_token_ids": [1 + (t * 31 + i * 97) % 3600 for t in range(64)], "output_len": 4}))
' >"$work/disagg-prompts.jsonl"
rm -rf "$work/disagg"
"$trtllm" bench --engine-dir "$engine" --disagg 1p1d --dataset jsonl --dataset-path "$work/disagg-prompts.jsonl" \
    --concurrency 2 --num-prompts 4 --warmup 0 --output-dir "$work/disagg" --quiet >"$work/disagg.log" 2>&1 ||
    { cat "$work/disagg.log" >&2; fail "trtllm bench --disagg 1p1d failed"; }
python3 - "$work/disagg/c2_jsonl_outds.json" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1]))
section = summary.get("disaggregation") or {}
check = section.get("token_check") or {}
problems = []
if summary.get("completed") != 4:
    problems.append(f"completed {summary.get('completed')} of 4")
if section.get("requests_with_split") != 4:
    problems.append(f"requests with a TTFT split: {section.get('requests_with_split')} of 4")
if not check.get("checked") or check.get("matched") != check.get("checked"):
    problems.append(f"tokens against an aggregated run: {check}")
if problems:
    sys.exit("real-mode check FAILED: disaggregated bench: " + "; ".join(problems))
EOF
stage "one disaggregated bench (1p1d) in real mode"
}

case "${1:-all}" in
    stand-in) build_stand_in ;;
    crate) build_crate ;;
    run) run_binary ;;
    all) build_stand_in && build_crate && run_binary ;;
    *) echo "usage: scripts/real-mode-check.sh [stand-in|crate|run]" >&2; exit 2 ;;
esac
