//! Build script: compiles the C++ shim against TensorRT-LLM when `TRTLLM_ROOT` points at an install,
//! and against the simulated executor in cpp/sim otherwise; compiles the gRPC protocol files in proto/.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build/cpp_reuse.rs"]
mod cpp_reuse;
#[cfg(feature = "grpc")]
#[path = "build/proto.rs"]
mod proto;

fn main() {
    for var in ["TRTLLM_ROOT", "CUDA_INCLUDE_DIR", "TRTLLM_CXX11_ABI", "TRTLLM_EXTRA_LIB_DIRS", "DOCS_RS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rustc-check-cfg=cfg(trtllm_real)");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rustc-env=TRTLLM_BUILD_PROFILE={}", build_profile());

    // docs.rs builds documentation only, without system packages or network:
    // rustdoc links nothing, so the C++ is not compiled there; the protocol types still are.
    if env::var_os("DOCS_RS").is_some() {
        #[cfg(feature = "grpc")]
        if let Err(e) = proto::compile_protos() {
            panic!("compiling proto/: {e}");
        }
        return;
    }

    // The simulated build adds the grammar engine's bridge (src/sim/guided/bridge.rs) when the `guided`
    // feature brings the grammar engine; the real one never does.
    let simulated = env::var_os("TRTLLM_ROOT").filter(|v| !v.is_empty()).is_none();
    let grammar = simulated && env::var_os("CARGO_FEATURE_GUIDED").is_some();
    let mut bridges = vec!["src/ffi.rs"];
    if grammar {
        bridges.push(SIM_GRAMMAR_BRIDGE);
    }
    if simulated {
        bridges.push(SIM_TIMING_BRIDGE);
        bridges.push(SIM_TRANSFER_BRIDGE);
    }
    let mut build = cxx_build::bridges(bridges);
    build.std("c++17").flag_if_supported("-Wall").flag_if_supported("-Wextra");
    track(&manifest.join("cpp/include/trtllm/shim.h"));
    track(&manifest.join(SHIM_INTERNAL_HEADER));
    for source in SHIM_SOURCES {
        build.file(source);
        track(&manifest.join(source));
    }

    match env::var_os("TRTLLM_ROOT").filter(|v| !v.is_empty()) {
        Some(root) => {
            configure_real(&mut build, Path::new(&root));
            build.compile(SHIM_ARCHIVE);
        }
        None => compile_simulated(build, &manifest, grammar),
    }

    #[cfg(feature = "grpc")]
    if let Err(e) = proto::compile_protos() {
        panic!("compiling proto/: {e}");
    }
}

/// The shim's sources, compiled in both the real and the simulated build: the core (handle, requests,
/// responses, stats, KV events) and one file per feature's conversions.
const SHIM_SOURCES: &[&str] = &[
    "cpp/src/shim.cc",
    "cpp/src/shim_disagg.cc",
    "cpp/src/shim_executor_config.cc",
    "cpp/src/shim_guided.cc",
    "cpp/src/shim_lora.cc",
    "cpp/src/shim_sim_control.cc",
    "cpp/src/shim_speculative.cc",
    "cpp/src/shim_stats.cc",
];

/// The static library the shim (and in the simulated build, the simulator) is archived into.
const SHIM_ARCHIVE: &str = "trtllm_shim";

/// What the shim's sources share (the handle's state, helpers, the feature files' declarations).
const SHIM_INTERNAL_HEADER: &str = "cpp/src/shim_internal.h";

/// Compile against the real headers and link the prebuilt TensorRT-LLM libraries (never build them).
fn configure_real(build: &mut cc::Build, root: &Path) {
    let include = root.join("include");
    let lib = root.join("lib");
    // NVIDIA's release image has both under /app/tensorrt_llm: include/ is a copy of the source tree's
    // cpp/include, lib/ a link to the wheel's tensorrt_llm/libs (docker/Dockerfile.multi, release stage).
    // A pip wheel ships the libraries but not these headers.
    if !include.join("tensorrt_llm/executor/executor.h").is_file() {
        panic!(
            "TRTLLM_ROOT={} has no include/tensorrt_llm/executor/executor.h: point it at /app/tensorrt_llm in \
             NVIDIA's release image, or, for a pip install, at a directory holding include/ (cpp/include from the \
             git tag of the installed version) and lib/ (site-packages/tensorrt_llm/libs)",
            root.display()
        );
    }
    if !lib.join("libtensorrt_llm.so").is_file() {
        panic!("TRTLLM_ROOT={} has no lib/libtensorrt_llm.so", root.display());
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
    // `_GLIBCXX_USE_CXX11_ABI` must match the library (std::string and std::list cross the API).
    // Upstream builds it with PyTorch's choice (`torch.compiled_with_cxx11_abi()`, cpp/CMakeLists.txt);
    // read it back from the library as upstream's executor examples do.
    let (abi, abi_source) = match env::var("TRTLLM_CXX11_ABI") {
        Ok(abi) => (Some(abi), "TRTLLM_CXX11_ABI"),
        Err(_) => (detect_cxx11_abi(&lib.join("libtensorrt_llm.so")), "nm -D libtensorrt_llm.so"),
    };
    match &abi {
        Some(abi) => {
            build.define("_GLIBCXX_USE_CXX11_ABI", abi.as_str());
        }
        None => println!(
            "cargo:warning=could not read the C++ ABI of {}/libtensorrt_llm.so (is `nm` installed?): \
             compiling with the compiler's default; set TRTLLM_CXX11_ABI=0|1 if linking fails on [abi:cxx11] symbols",
            lib.display()
        ),
    }
    // What `trtllm doctor` reports about this build.
    println!("cargo:rustc-env=TRTLLM_BUILD_INCLUDE_DIR={}", include.display());
    println!("cargo:rustc-env=TRTLLM_BUILD_LIB_DIR={}", lib.display());
    println!("cargo:rustc-env=TRTLLM_BUILD_CXX11_ABI={}", abi.as_deref().unwrap_or("compiler default"));
    println!("cargo:rustc-env=TRTLLM_BUILD_CXX11_ABI_SOURCE={abi_source}");
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
    // The link interface upstream's executor examples give these two (examples/cpp/executor/CMakeLists.txt):
    // the plugin library, which brings libtensorrt_llm.so, which brings the CUDA driver (libcuda.so.1),
    // NVML and the static CUDA runtime. TensorRT, NCCL and MPI come in as libtensorrt_llm.so's own
    // dependencies at load time. libcuda.so.1 exists only where a GPU driver is installed (not in a
    // `docker build`): leave the libraries' own undefined symbols to the loader.
    println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
}

/// The library's C++ ABI, read as upstream's examples/cpp/executor/CMakeLists.txt does: a library built
/// with the new ABI has `__cxx11` in its dynamic symbols' mangled names (`nm -f posix -D ... | grep __cxx11`).
fn detect_cxx11_abi(library: &Path) -> Option<String> {
    let output = Command::new("nm").args(["-f", "posix", "-D"]).arg(library).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Some(if text.contains("__cxx11") { "1" } else { "0" }.to_string())
}

/// The sim-only bridge to the llguidance grammar engine (guided decoding in the simulator).
const SIM_GRAMMAR_BRIDGE: &str = "src/sim/guided/bridge.rs";

/// The sim-only bridge to the Rust timing and memory model (src/sim/perf_model.rs).
const SIM_TIMING_BRIDGE: &str = "src/sim/bridge.rs";

/// The sim-only bridge to the KV transfer model (src/sim/transfer.rs), for disaggregated serving.
const SIM_TRANSFER_BRIDGE: &str = "src/sim/transfer_bridge.rs";

fn compile_simulated(mut build: cc::Build, manifest: &Path, grammar: bool) {
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
        .define("TRTLLM_SIM_RUST_TIMING", None)
        .files(&sources);
    // Without the grammar engine the simulator links a fallback that refuses guided requests.
    if grammar {
        simulator.define("TRTLLM_SIM_RUST_GRAMMAR", None);
    }
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cxxbridge = out.join("cxxbridge");
    let key = cpp_reuse::key(
        &out,
        &[&build, &simulator],
        &[manifest.join("cpp"), cxxbridge.join("sources"), cxxbridge.join("include")],
    );
    if cpp_reuse::reuse(&out, &key, &format!("lib{SHIM_ARCHIVE}.a"), SIM_OBJECT_LIST) {
        println!("cargo:rustc-link-lib=static={SHIM_ARCHIVE}");
        println!("cargo:rustc-link-search=native={}", out.display());
    } else {
        cpp_reuse::forget(&out);
        let objects = simulator.compile_intermediates();
        let listing: String = sources
            .iter()
            .zip(&objects)
            .map(|(source, object)| format!("{}\t{}\n", source.display(), object.display()))
            .collect();
        std::fs::write(out.join(SIM_OBJECT_LIST), listing).expect("writing the simulator's object list");
        build.objects(&objects);
        build.compile(SHIM_ARCHIVE);
        cpp_reuse::record(&out, &key);
    }
    println!("cargo:rustc-link-lib=pthread");
}

/// Lists the simulator's objects in OUT_DIR, one `source<TAB>object` line each, in source order.
const SIM_OBJECT_LIST: &str = "simulator_objects.tsv";

fn track(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}

/// The Cargo profile this build runs under, for the benches to print beside their figures.
///
/// Cargo tells build scripts only `PROFILE` (`debug` or `release`, also for custom profiles such as
/// `dist` that inherit `release`), so the name is read from the output directory instead:
/// `<target>/[<triple>/]<profile dir>/build/<package>-<hash>/out`, where the profile directory is
/// the profile's name (`debug` for `dev` and `test`, `release` for `bench`).
fn build_profile() -> String {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out_dir.ancestors().nth(3).and_then(|d| d.file_name()).and_then(|n| n.to_str());
    let opt_level = env::var("OPT_LEVEL").unwrap_or_default();
    match dir {
        Some(name) => format!("{name} (opt-level {opt_level})"),
        None => format!("{} (opt-level {opt_level})", env::var("PROFILE").unwrap_or_default()),
    }
}
