//! `trtllm --version` and `trtllm version` name the executor backend the binary was built against.

use std::process::Command;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trtllm")).args(args).output().expect("run trtllm");
    assert!(out.status.success(), "trtllm {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn version_names_the_backend() {
    let backend = trtllm::Backend::current();
    assert_eq!(backend.kind.to_string(), "simulated", "the tests run on the simulated executor");

    let short = run(&["--version"]);
    assert_eq!(short.trim(), format!("trtllm {} ({backend})", env!("CARGO_PKG_VERSION")));
    assert!(short.contains("simulated"), "{short}");

    let long = run(&["version"]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines[0], format!("trtllm {}", env!("CARGO_PKG_VERSION")));
    assert_eq!(lines[1], format!("backend: {} {}", backend.kind, backend.version));
    assert!(lines[2].starts_with("supported TensorRT-LLM lines: 1.1"), "{long}");
}
