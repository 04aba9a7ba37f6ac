//! Builds and runs the simulated executor's C++ test programs (cpp/sim/tests/sim_test.cpp for the executor,
//! timing_test.cpp for the clocks, disagg_test.cpp for the cache transceiver; the timing model itself is
//! tested in Rust) with the system C++ compiler, linked with the simulator
//! objects build.rs compiled for the crate, so `cargo test` covers the simulator's behaviour on its own, below the
//! Rust bindings.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::OnceLock;
use std::thread::available_parallelism;

/// Flags of the compilations done here (test mains, the grammar fallback): build.rs's, plus warnings as checks.
const CXX_FLAGS: [&str; 5] = ["-std=c++17", "-O1", "-pthread", "-Wall", "-Wextra"];

/// The C++ compiler: `$CXX` when set, otherwise the system `c++`.
fn compiler() -> String {
    std::env::var("CXX").ok().filter(|cxx| !cxx.trim().is_empty()).unwrap_or_else(|| "c++".to_string())
}

/// Every `.cpp` file of the simulator's sources, in a stable order.
fn simulator_sources(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut sources: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cpp"))
        .collect();
    sources.sort();
    sources
}

fn spawn_compile(source: &Path, object: &Path, include: &Path) -> Child {
    Command::new(compiler())
        .args(CXX_FLAGS)
        .arg("-I")
        .arg(include)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(object)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the C++ compiler could not be started (set CXX or install c++)")
}

/// Panics with the compiler's diagnostics unless `output` is a warning-free success.
fn assert_clean(what: &Path, output: &Output) {
    let diagnostics = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "compiling {} failed:\n{diagnostics}", what.display());
    assert!(!diagnostics.contains("warning:"), "{} must compile without warnings:\n{diagnostics}", what.display());
}

/// What build.rs leaves in OUT_DIR: one `source<TAB>object` line per simulator source it compiled.
const SIM_OBJECT_LIST: &str = "simulator_objects.tsv";

/// The sources build.rs compiles against the Rust bridges (the grammar engine, the timing and transfer models), which a
/// C++-only test program cannot link, so the tests compile their bridge-free stand-ins instead.
const BRIDGED_SOURCES: [&str; 3] = ["guided_grammar.cpp", "timing_bridge.cpp", "transfer_model.cpp"];

/// The simulator's objects for a test program, once per test process: the ones build.rs compiled for the crate
/// (with the grammar engine swapped for its fallback), or, when the crate was built against real TensorRT-LLM and
/// compiled no simulator, every source compiled here.
fn simulator_objects(sim: &Path) -> &'static [PathBuf] {
    static OBJECTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        let objects_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sim_objects");
        match built_simulator_objects() {
            Some(built) => {
                let (bridged, objects): (Vec<_>, Vec<_>) = built
                    .into_iter()
                    .partition(|(source, _)| BRIDGED_SOURCES.iter().any(|bridged| source.ends_with(bridged)));
                assert_eq!(bridged.len(), BRIDGED_SOURCES.len(), "build.rs listed {bridged:?}");
                let stand_ins: Vec<PathBuf> =
                    BRIDGED_SOURCES.iter().map(|source| sim.join("src").join(source)).collect();
                let fallback = compile_all(&stand_ins, &objects_dir, &sim.join("include"));
                let mut objects: Vec<PathBuf> = objects.into_iter().map(|(_, object)| object).collect();
                objects.extend(fallback);
                objects
            }
            None => {
                let sources = simulator_sources(&sim.join("src"));
                assert!(!sources.is_empty(), "no simulator sources under {}", sim.display());
                compile_all(&sources, &objects_dir, &sim.join("include"))
            }
        }
    })
}

/// build.rs's list of (source, object) pairs, or `None` when this build compiled no simulator.
fn built_simulator_objects() -> Option<Vec<(PathBuf, PathBuf)>> {
    let list = Path::new(env!("OUT_DIR")).join(SIM_OBJECT_LIST);
    let text = std::fs::read_to_string(list).ok()?;
    let pairs = text
        .lines()
        .map(|line| {
            let (source, object) =
                line.split_once('\t').unwrap_or_else(|| panic!("bad line in {SIM_OBJECT_LIST}: {line}"));
            (PathBuf::from(source), PathBuf::from(object))
        })
        .collect();
    Some(pairs)
}

/// Compiles `sources` into `objects_dir`, as many at a time as there are cores; returns the objects.
fn compile_all(sources: &[PathBuf], objects_dir: &Path, include: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(objects_dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", objects_dir.display()));
    let jobs = available_parallelism().map_or(2, |n| n.get());
    let mut objects = Vec::new();
    for batch in sources.chunks(jobs) {
        let running: Vec<(PathBuf, Child)> = batch
            .iter()
            .map(|source| {
                let name = source
                    .file_stem()
                    .map_or_else(|| "unnamed".to_string(), |stem| stem.to_string_lossy().into_owned());
                let object = objects_dir.join(format!("{name}.o"));
                let child = spawn_compile(source, &object, include);
                objects.push(object);
                (source.clone(), child)
            })
            .collect();
        for (source, child) in running {
            let output = child.wait_with_output().unwrap_or_else(|e| panic!("waiting for the compiler failed: {e}"));
            assert_clean(&source, &output);
        }
    }
    objects
}

/// Compiles the test program `cpp/sim/tests/<name>.cpp`, links it with the simulator and runs it, failing
/// unless every one of its tests passes.
fn run_test_program(name: &str) {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("cpp/sim");
    let simulator = simulator_objects(&sim);
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let main =
        compile_all(&[sim.join(format!("tests/{name}.cpp"))], &binary.with_extension("objects"), &sim.join("include"));
    let link = Command::new(compiler())
        .arg("-pthread")
        .args(simulator)
        .args(&main)
        .arg("-o")
        .arg(&binary)
        .output()
        .expect("the C++ compiler could not be started for linking");
    assert_clean(&binary, &link);

    let run = Command::new(&binary).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the simulator's C++ tests ({name}) failed:\n{stdout}");
    assert!(stdout.contains(" passed, 0 failed"), "unexpected summary from the C++ tests ({name}):\n{stdout}");
}

/// The C++ sources build.rs compiled (the shim, the cxx bridges and the simulator, with `-Wall -Wextra`) raised no
/// warning: cargo keeps the build script's output, where the `cc` crate reports each compiler warning.
#[test]
fn cpp_sources_compile_without_warnings() {
    if built_simulator_objects().is_none() {
        return; // Built against real TensorRT-LLM: its headers are not ours to hold to these flags.
    }
    let output = Path::new(env!("OUT_DIR")).parent().expect("OUT_DIR has a parent").join("output");
    let text = std::fs::read_to_string(&output).unwrap_or_else(|e| panic!("cannot read {}: {e}", output.display()));
    let warnings: Vec<&str> = text.lines().filter(|line| line.starts_with("cargo:warning=")).collect();
    assert!(warnings.is_empty(), "the build script reported compiler warnings:\n{}", warnings.join("\n"));
}

#[test]
fn simulated_executor_cpp_tests_pass() {
    run_test_program("sim_test");
}

#[test]
fn simulated_clock_cpp_tests_pass() {
    run_test_program("timing_test");
}

#[test]
fn simulated_disaggregation_cpp_tests_pass() {
    run_test_program("disagg_test");
}
