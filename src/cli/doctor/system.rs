//! The doctor's checks of the machine and the build: backend and version, the libraries this
//! process loaded and their C++ ABI, CUDA and the GPUs, MPI and `executorWorker`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::report::{Check, Report};

/// Where NVIDIA's release image keeps `executorWorker` (docker/Dockerfile.multi, release stage).
const RELEASE_IMAGE_WORKER: &str = "/app/tensorrt_llm/bin/executorWorker";

fn simulated() -> bool {
    trtllm::Backend::current().is_simulated()
}

/// The backend, its version against the supported lines, and how this binary was built.
pub fn check_build(report: &mut Report) {
    let backend = trtllm::Backend::current();
    let supported = trtllm::SUPPORTED_LINES
        .iter()
        .any(|line| backend.version.strip_prefix(line).is_some_and(|rest| rest.starts_with('.')));
    let mut check = if supported {
        Check::ok("backend", backend.to_string())
    } else {
        Check::fail(
            "backend",
            format!("{backend} is outside the supported lines ({})", trtllm::SUPPORTED_LINES.join(", ")),
            "use NVIDIA's release image 1.1.x or 1.2.x (nvcr.io/nvidia/tensorrt-llm/release), the last lines \
             that ship the TensorRT-engine Executor, and rebuild trtllm there",
        )
    };
    check = check
        .fact("kind", backend.kind.clone())
        .fact("library_version", backend.version.clone())
        .fact("trtllm_version", env!("CARGO_PKG_VERSION"));
    if let (Some(include), Some(lib)) = (option_env!("TRTLLM_BUILD_INCLUDE_DIR"), option_env!("TRTLLM_BUILD_LIB_DIR")) {
        check = check
            .fact("built_against_headers", include)
            .fact("built_against_libraries", lib)
            .fact("cxx11_abi", option_env!("TRTLLM_BUILD_CXX11_ABI").unwrap_or("unknown"))
            .fact("cxx11_abi_from", option_env!("TRTLLM_BUILD_CXX11_ABI_SOURCE").unwrap_or("unknown"));
    }
    report.push(check);
}

/// Shared libraries this process has mapped, by path (from /proc/self/maps).
fn loaded_libraries() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut paths: Vec<PathBuf> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| path.contains(".so"))
        .map(PathBuf::from)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn find_loaded<'a>(libraries: &'a [PathBuf], stem: &str) -> Option<&'a PathBuf> {
    libraries.iter().find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(stem)))
}

/// The C++ ABI a library was built with, read as upstream's executor examples do (`__cxx11` in the
/// mangled dynamic symbols).
fn library_cxx11_abi(library: &Path) -> Option<&'static str> {
    let output = Command::new("nm").args(["-f", "posix", "-D"]).arg(library).output().ok()?;
    output.status.success().then(|| if String::from_utf8_lossy(&output.stdout).contains("__cxx11") { "1" } else { "0" })
}

/// The TensorRT-LLM, TensorRT, CUDA, NCCL and MPI libraries loaded, the ABI check, and the plugins.
pub fn check_libraries(report: &mut Report) {
    if simulated() {
        report.push(Check::ok("libraries", "the simulated executor is compiled in; no TensorRT-LLM library is loaded"));
        report.push(Check::skipped("plugins", "the simulated executor has no TensorRT plugins"));
        return;
    }
    let libraries = loaded_libraries();
    let stems = [
        "libtensorrt_llm.so",
        "libnvinfer_plugin_tensorrt_llm.so",
        "libnvinfer.so",
        "libcudart.so",
        "libcuda.so",
        "libnvidia-ml.so",
        "libnccl.so",
        "libmpi.so",
    ];
    let mut check = Check::ok("libraries", "loaded by this process");
    for stem in stems {
        let found = find_loaded(&libraries, stem).map_or("not loaded".to_string(), |p| p.display().to_string());
        check = check.fact(stem.trim_end_matches(".so"), found);
    }
    let main = find_loaded(&libraries, "libtensorrt_llm.so").cloned();
    match (&main, main.as_deref().and_then(library_cxx11_abi), option_env!("TRTLLM_BUILD_CXX11_ABI")) {
        (None, _, _) => {
            check = Check::fail(
                "libraries",
                "libtensorrt_llm.so is not loaded",
                "run inside the release image, or add its lib directory to LD_LIBRARY_PATH",
            )
            .fact("loaded", libraries.iter().map(|p| p.display().to_string()).collect::<Vec<_>>())
        }
        (Some(_), Some(loaded), Some(built)) if loaded != built => {
            check = Check::fail(
                "libraries",
                format!(
                    "the shim was compiled with _GLIBCXX_USE_CXX11_ABI={built} but the loaded library uses {loaded}"
                ),
                format!("rebuild with TRTLLM_CXX11_ABI={loaded} cargo build --release"),
            )
            .fact("libtensorrt_llm", main.as_ref().map(|p| p.display().to_string()).unwrap_or_default());
        }
        (Some(_), loaded, _) => check = check.fact("loaded_library_cxx11_abi", loaded.unwrap_or("unknown (no nm)")),
    }
    report.push(check);
    report.push(match find_loaded(&libraries, "libnvinfer_plugin_tensorrt_llm.so") {
        Some(path) => Check::ok(
            "plugins",
            "libnvinfer_plugin_tensorrt_llm.so is loaded; initTrtLlmPlugins runs before the first executor \
             (the smoke test's engine load exercises it)",
        )
        .fact("library", path.display().to_string()),
        None => Check::fail(
            "plugins",
            "libnvinfer_plugin_tensorrt_llm.so is not loaded: engines with plugin layers cannot load",
            "rebuild trtllm against the release image's /app/tensorrt_llm (build.rs links the plugin library)",
        ),
    });
}

/// Runs a command and returns its stdout when it succeeds.
fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The GPUs `nvidia-smi` lists, one line each: index, name, memory, driver, compute capability.
pub fn gpus() -> Option<Vec<String>> {
    let query = "--query-gpu=index,name,memory.total,driver_version,compute_cap";
    output_of("nvidia-smi", &[query, "--format=csv,noheader"]).map(|s| s.lines().map(str::to_string).collect())
}

/// The CUDA driver, the CUDA runtime this environment ships, and the GPUs.
pub fn check_cuda(report: &mut Report) {
    let runtime = std::env::var("CUDA_VERSION")
        .ok()
        .or_else(|| output_of("nvcc", &["--version"]).and_then(|v| v.lines().last().map(str::to_string)));
    let gpus = gpus();
    let check = match (&gpus, simulated()) {
        (Some(list), _) if !list.is_empty() => Check::ok("cuda", format!("{} GPU(s)", list.len())),
        (_, true) => Check::ok("cuda", "no GPU found; the simulated executor needs none"),
        (_, false) => Check::fail(
            "cuda",
            "nvidia-smi lists no GPU",
            "start the container with `--gpus all` (NVIDIA Container Toolkit) and check `nvidia-smi` on the host",
        ),
    };
    let driver = gpus.as_ref().and_then(|g| g.first()).and_then(|line| line.split(", ").nth(3).map(str::to_string));
    report.push(
        check
            .fact("driver", driver.unwrap_or_else(|| "unknown".into()))
            .fact("cuda_runtime", runtime.unwrap_or_else(|| "unknown (CUDA_VERSION unset, no nvcc)".into()))
            .fact("gpus", gpus.unwrap_or_default())
            .fact("CUDA_VISIBLE_DEVICES", std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into())),
    );
}

/// Where `executorWorker` is: the given path, next to the libraries this binary was built against,
/// in the release image, or in the installed wheel (`tensorrt_llm/bin`).
fn find_worker(given: Option<&Path>) -> (Option<PathBuf>, Vec<PathBuf>) {
    if let Some(path) = given {
        return (path.is_file().then(|| path.to_path_buf()), vec![path.to_path_buf()]);
    }
    let mut candidates = Vec::new();
    if let Some(lib) = option_env!("TRTLLM_BUILD_LIB_DIR") {
        candidates.push(Path::new(lib).join("../bin/executorWorker"));
    }
    candidates.push(PathBuf::from(RELEASE_IMAGE_WORKER));
    let spec = "import importlib.util as u; s = u.find_spec('tensorrt_llm'); print(s.submodule_search_locations[0] if s else '')";
    if let Some(package) = output_of("python3", &["-c", spec]).filter(|p| !p.is_empty()) {
        candidates.push(Path::new(&package).join("bin/executorWorker"));
    }
    let found = candidates.iter().find(|p| p.is_file()).cloned();
    (found, candidates)
}

/// `mpirun` (leader mode) and `executorWorker` (orchestrator mode).
pub fn check_mpi_and_worker(report: &mut Report, worker: Option<&Path>, orchestrator: bool) {
    let mpi = output_of("mpirun", &["--version"]).and_then(|v| v.lines().next().map(str::to_string));
    let (found, looked) = find_worker(worker);
    let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
    let check = match (&found, simulated()) {
        (_, true) => Check::ok("multi-gpu", "the simulated executor runs one process; no MPI or worker needed"),
        (Some(path), false) => {
            Check::ok("multi-gpu", "executorWorker found").fact("executor_worker", path.display().to_string())
        }
        (None, false) if orchestrator || worker.is_some() => Check::fail(
            "multi-gpu",
            "executorWorker not found: orchestrator mode cannot start its workers",
            format!("pass --worker-executable (in the release image: {RELEASE_IMAGE_WORKER})"),
        ),
        (None, false) => Check::warn(
            "multi-gpu",
            "executorWorker not found (only orchestrator mode needs it)",
            format!("pass --worker-executable for --orchestrator runs (release image: {RELEASE_IMAGE_WORKER})"),
        ),
    };
    report.push(
        check
            .fact("mpirun", mpi.unwrap_or_else(|| "not found (leader mode needs `mpirun -n <world size>`)".into()))
            .fact("worker_searched", looked),
    );
}

#[cfg(test)]
mod tests {
    use super::{find_loaded, library_cxx11_abi, loaded_libraries};

    /// The checks the real build relies on, tried on what this process has: the C++ runtime is loaded
    /// (the shim is C++) and, built with GCC's default new ABI, shows `__cxx11` symbols.
    #[test]
    fn finds_loaded_libraries_and_reads_their_cxx11_abi() {
        let libraries = loaded_libraries();
        let libstdcxx = find_loaded(&libraries, "libstdc++.so").expect("libstdc++ is loaded");
        assert!(libstdcxx.is_absolute(), "{}", libstdcxx.display());
        if std::process::Command::new("nm").arg("--version").output().is_ok() {
            assert_eq!(library_cxx11_abi(libstdcxx), Some("1"));
        }
        assert_eq!(library_cxx11_abi(std::path::Path::new("/nonexistent/libx.so")), None);
    }
}
