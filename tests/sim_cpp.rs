//! Builds and runs the simulated executor's C++ test program (cpp/sim/tests/sim_test.cpp) with the system
//! C++ compiler, so `cargo test` covers the simulator's behaviour on its own, below the Rust bindings.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::thread::available_parallelism;

/// Flags of every compilation: the ones build.rs uses, plus the warnings the simulator must not trigger.
const CXX_FLAGS: [&str; 5] = ["-std=c++17", "-O1", "-pthread", "-Wall", "-Wextra"];

/// The C++ compiler: `$CXX` when set, otherwise the system `c++`.
fn compiler() -> String {
    std::env::var("CXX")
        .ok()
        .filter(|cxx| !cxx.trim().is_empty())
        .unwrap_or_else(|| "c++".to_string())
}

/// Every `.cpp` file of the simulator's sources, in a stable order.
fn simulator_sources(dir: &Path) -> Vec<PathBuf> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
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
    assert!(
        output.status.success(),
        "compiling {} failed:\n{diagnostics}",
        what.display()
    );
    assert!(
        !diagnostics.contains("warning:"),
        "{} must compile without warnings:\n{diagnostics}",
        what.display()
    );
}

/// Compiles the simulator and its test program (a few files at a time) and links them into `binary`.
fn build_test_program(sim: &Path, binary: &Path) {
    let objects_dir = binary.with_extension("objects");
    std::fs::create_dir_all(&objects_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", objects_dir.display()));
    let mut sources = simulator_sources(&sim.join("src"));
    assert!(
        !sources.is_empty(),
        "no simulator sources under {}",
        sim.display()
    );
    sources.push(sim.join("tests/sim_test.cpp"));

    let include = sim.join("include");
    let jobs = available_parallelism().map_or(2, |n| n.get());
    let mut objects = Vec::new();
    for batch in sources.chunks(jobs) {
        let running: Vec<(PathBuf, Child)> = batch
            .iter()
            .map(|source| {
                let name = source.file_stem().map_or_else(
                    || "unnamed".to_string(),
                    |stem| stem.to_string_lossy().into_owned(),
                );
                let object = objects_dir.join(format!("{name}.o"));
                let child = spawn_compile(source, &object, &include);
                objects.push(object);
                (source.clone(), child)
            })
            .collect();
        for (source, child) in running {
            let output = child
                .wait_with_output()
                .unwrap_or_else(|e| panic!("waiting for the compiler failed: {e}"));
            assert_clean(&source, &output);
        }
    }

    let link = Command::new(compiler())
        .arg("-pthread")
        .args(&objects)
        .arg("-o")
        .arg(binary)
        .output()
        .expect("the C++ compiler could not be started for linking");
    assert_clean(binary, &link);
}

#[test]
fn simulated_executor_cpp_tests_pass() {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("cpp/sim");
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sim_test");
    build_test_program(&sim, &binary);

    let run = Command::new(&binary)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(
        run.status.success(),
        "the simulator's C++ tests failed:\n{stdout}"
    );
    assert!(
        stdout.contains(" passed, 0 failed"),
        "unexpected summary from the C++ tests:\n{stdout}"
    );
}
