//! Build script: compiles the C++ shim against TensorRT-LLM when `TRTLLM_ROOT` points at an install,
//! and against the simulated executor in cpp/sim otherwise; compiles the gRPC protocol files in proto/.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[cfg(feature = "grpc")]
#[path = "build/proto.rs"]
mod proto;

fn main() {
    for var in ["TRTLLM_ROOT", "CUDA_INCLUDE_DIR", "TRTLLM_CXX11_ABI", "TRTLLM_EXTRA_LIB_DIRS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rustc-check-cfg=cfg(trtllm_real)");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));

    // The simulated build adds the grammar engine's bridge (src/sim/guided/bridge.rs); the real one never does.
    let simulated = env::var_os("TRTLLM_ROOT").filter(|v| !v.is_empty()).is_none();
    let bridges: &[&str] =
        if simulated { &["src/ffi.rs", SIM_GRAMMAR_BRIDGE, SIM_TIMING_BRIDGE] } else { &["src/ffi.rs"] };
    let mut build = cxx_build::bridges(bridges);
    build.std("c++17").flag_if_supported("-Wall").flag_if_supported("-Wextra");
    track(&manifest.join("cpp/include/trtllm/shim.h"));
    track(&manifest.join(SHIM_INTERNAL_HEADER));
    for source in SHIM_SOURCES {
        build.file(source);
        track(&manifest.join(source));
    }

    match env::var_os("TRTLLM_ROOT").filter(|v| !v.is_empty()) {
        Some(root) => configure_real(&mut build, Path::new(&root)),
        None => configure_simulated(&mut build, &manifest),
    }
    build.compile("trtllm_shim");

    #[cfg(feature = "grpc")]
    if let Err(e) = proto::compile_protos() {
        panic!("compiling proto/: {e}");
    }
}

/// The shim's sources, compiled in both the real and the simulated build: the core (handle, requests,
/// responses, stats, KV events) and one file per feature's conversions.
const SHIM_SOURCES: &[&str] = &[
    "cpp/src/shim.cc",
    "cpp/src/shim_executor_config.cc",
    "cpp/src/shim_guided.cc",
    "cpp/src/shim_lora.cc",
    "cpp/src/shim_sim_control.cc",
    "cpp/src/shim_speculative.cc",
];

/// What the shim's sources share (the handle's state, helpers, the feature files' declarations).
const SHIM_INTERNAL_HEADER: &str = "cpp/src/shim_internal.h";

/// Compile against the real headers and link the prebuilt TensorRT-LLM libraries (never build them).
fn configure_real(build: &mut cc::Build, root: &Path) {
    let include = root.join("include");
    let lib = root.join("lib");
    if !include.join("tensorrt_llm/executor/executor.h").is_file() {
        panic!("TRTLLM_ROOT={} has no include/tensorrt_llm/executor/executor.h", root.display());
    }
    let cuda_include =
        env::var_os("CUDA_INCLUDE_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/local/cuda/include"));
    // The upstream headers warn under stricter flags: include them as system headers.
    build
        .flag("-isystem")
        .flag(include.to_string_lossy().as_ref())
        .flag("-isystem")
        .flag(cuda_include.to_string_lossy().as_ref())
        .define("TRTLLM_SHIM_REAL", None)
        .define("ENABLE_BF16", None)
        .define("ENABLE_FP8", None);
    let abi = env::var("TRTLLM_CXX11_ABI").ok().or_else(|| detect_cxx11_abi(&lib.join("libtensorrt_llm.so")));
    if let Some(abi) = abi {
        build.define("_GLIBCXX_USE_CXX11_ABI", abi.as_str());
    }
    println!("cargo:rustc-cfg=trtllm_real");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    if let Ok(extra) = env::var("TRTLLM_EXTRA_LIB_DIRS") {
        for dir in env::split_paths(&extra) {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
    }
    for name in ["tensorrt_llm", "nvinfer_plugin_tensorrt_llm"] {
        println!("cargo:rustc-link-lib=dylib={name}");
    }
    // libtensorrt_llm.so needs the driver's libcuda.so.1, which exists only where a GPU driver is
    // installed (not in a `docker build`): leave the libraries' own symbols to the loader.
    println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
}

/// `nm -D` shows `[abi:cxx11]`-tagged symbols only in a library built with the new ABI.
fn detect_cxx11_abi(library: &Path) -> Option<String> {
    let output = Command::new("nm").arg("-D").arg("--demangle").arg(library).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Some(if text.contains("[abi:cxx11]") { "1" } else { "0" }.to_string())
}

/// The sim-only bridge to the llguidance grammar engine (guided decoding in the simulator).
const SIM_GRAMMAR_BRIDGE: &str = "src/sim/guided/bridge.rs";

/// The sim-only bridge to the Rust timing and memory model (src/sim/perf_model.rs).
const SIM_TIMING_BRIDGE: &str = "src/sim/bridge.rs";

fn configure_simulated(build: &mut cc::Build, manifest: &Path) {
    require_nlohmann_json(build);
    track(&manifest.join(SIM_GRAMMAR_BRIDGE));
    track(&manifest.join(SIM_TIMING_BRIDGE));
    let sim = manifest.join("cpp/sim");
    build.include(sim.join("include"));
    // Directories too, so that a newly added source file triggers a rebuild.
    track(&sim.join("src"));
    track(&sim.join("include/tensorrt_llm/executor"));
    track(&sim.join("include/tensorrt_llm/runtime"));
    track(&sim.join("include/trtllm_sim"));
    track(&sim.join("include/trtllm_sim/executor"));
    let mut sources = Vec::new();
    for dir in [
        "include/tensorrt_llm/executor",
        "include/tensorrt_llm/runtime",
        "include/trtllm_sim",
        "include/trtllm_sim/executor",
        "src",
    ] {
        let Ok(entries) = std::fs::read_dir(sim.join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for path in files {
            track(&path);
            if path.extension().is_some_and(|ext| ext == "cpp") {
                sources.push(path);
            }
        }
    }

    // The simulator is compiled on its own and archived with the shim, and its objects are listed in
    // OUT_DIR: the simulator's C++ test programs (tests/sim/cpp.rs) link these objects instead of
    // compiling the simulator a second time. The empty bridge list only brings cxx's include paths
    // (guided_grammar.cpp includes the grammar bridge's header).
    let mut simulator = cxx_build::bridges(std::iter::empty::<&Path>());
    simulator
        .std("c++17")
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .include(sim.join("include"))
        .define("TRTLLM_SIM_RUST_GRAMMAR", None)
        .define("TRTLLM_SIM_RUST_TIMING", None)
        .files(&sources);
    let objects = simulator.compile_intermediates();
    let listing: String = sources
        .iter()
        .zip(&objects)
        .map(|(source, object)| format!("{}\t{}\n", source.display(), object.display()))
        .collect();
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join(SIM_OBJECT_LIST), listing).expect("writing the simulator's object list");
    build.objects(&objects);
    println!("cargo:rustc-link-lib=pthread");
}

/// Lists the simulator's objects in OUT_DIR, one `source<TAB>object` line each, in source order.
const SIM_OBJECT_LIST: &str = "simulator_objects.tsv";

/// The simulator reads its configuration files with nlohmann/json: fail early, naming the package, when the
/// compiler cannot find its header (the real TensorRT-LLM build does not need it).
fn require_nlohmann_json(build: &cc::Build) {
    println!("cargo:rerun-if-env-changed=CPATH");
    println!("cargo:rerun-if-env-changed=CPLUS_INCLUDE_PATH");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let probe = out.join("nlohmann_probe.cc");
    std::fs::write(&probe, "#include <nlohmann/json.hpp>\n")
        .unwrap_or_else(|e| panic!("writing {}: {e}", probe.display()));
    let mut command = build.get_compiler().to_command();
    command.arg("-std=c++17").arg("-fsyntax-only").arg(&probe);
    let found = command.output().map(|o| o.status.success()).unwrap_or(false);
    if !found {
        panic!(
            "the simulated executor (built because TRTLLM_ROOT is unset) needs the nlohmann/json header \
             <nlohmann/json.hpp>: install it (Debian/Ubuntu: `apt-get install nlohmann-json3-dev`) or add its \
             directory to CPLUS_INCLUDE_PATH"
        );
    }
}

fn track(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}
