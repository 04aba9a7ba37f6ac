//! `trtllm bench compare` names every difference between two runs' workloads and targets, and
//! prints a speedup across different workloads only when asked (exit status 3 otherwise).

use crate::common;

use common::cli::{run_bench, small_bench};
use trtllm::sim::ClockMode;

#[test]
fn compare_refuses_a_speedup_across_different_workloads_unless_asked() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(2.0).clock(ClockMode::Virtual));
    let out = tempfile::tempdir().unwrap();
    let (a_dir, same_dir, b_dir) = (out.path().join("a"), out.path().join("same"), out.path().join("b"));
    small_bench(engine.path(), &a_dir, &["--quiet"]);
    small_bench(engine.path(), &same_dir, &["--quiet"]);
    // Twice the users and longer prompts.
    let engine_arg = engine.path().to_str().unwrap();
    let b_args = ["--engine-dir", engine_arg, "--concurrency", "4", "--input-len", "32", "--output-len", "8"];
    common::cli::bench(
        &[&b_args[..], &["--num-prompts", "4", "--quiet", "--output-dir", b_dir.to_str().unwrap()]].concat(),
    );
    let a = a_dir.join("c2_in16_out8.json");
    let (same, b) = (same_dir.join("c2_in16_out8.json"), b_dir.join("c4_in32_out8.json"));
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();

    // The same workload: a speedup, and nothing differs.
    let ok = run_bench(&["compare", a.to_str().unwrap(), same.to_str().unwrap()]);
    assert!(ok.status.success(), "{}", common::cli::stderr(&ok));
    assert!(text(&ok).contains("workloads and targets: the same"), "{}", text(&ok));
    assert!(text(&ok).contains("speedup of B over A"), "{}", text(&ok));

    // Different workloads: each difference named, no speedup, exit status 3.
    let refused = run_bench(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    for named in [
        "workload  max_concurrency: A 2, B 4",
        "workload  prompt tokens per request: A 16.0, B 32.0",
        "workload  workload.input_len: A 16, B 32",
    ] {
        assert!(text(&refused).contains(named), "{named} missing: {}", text(&refused));
    }
    assert!(!text(&refused).contains("speedup of B over A"), "{}", text(&refused));
    assert!(common::cli::stderr(&refused).contains("--allow-different-workloads"));
    assert!(b_dir.join("c4_in32_out8.compare.html").exists(), "the report is still written");

    // Asked for: the speedup, said to be across different workloads.
    let allowed = run_bench(&["compare", "--allow-different-workloads", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(allowed.status.success(), "{}", common::cli::stderr(&allowed));
    assert!(text(&allowed).contains("speedup of B over A") && text(&allowed).contains("across different workloads"));
}
