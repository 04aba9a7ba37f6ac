//! The real-engine switch, tested the way a GPU user flips it: this same test binary run again with
//! `TRTLLM_TEST_ENGINE_DIR` and `TRTLLM_TEST_TOKENIZER` naming a simulated engine directory that
//! differs from the default one (speculative, no LoRA, tokenizer kept elsewhere), and with
//! variables that name something broken, which must fail loudly instead of testing the default.

use std::path::Path;
use std::process::{Command, Output};

use crate::harness::{ENGINE_DIR_ENV, TOKENIZER_ENV, skip, write_simulated_engine};

/// Runs this test binary with the suite's variables set as given (and no others inherited).
fn run_suite(vars: &[(&str, &Path)], filter: &[&str]) -> Output {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(exe);
    command.args(filter).args(["--skip", "switch::", "--test-threads", "2"]);
    for (name, _) in std::env::vars() {
        if name.starts_with("TRTLLM_TEST_") {
            command.env_remove(name);
        }
    }
    command.envs(vars.iter().map(|(k, v)| (*k, v.as_os_str()))).output().expect("run the suite")
}

/// True (the switch tests skip) when the suite already runs on a named engine, or on the real library,
/// which cannot load the simulated engines these tests write.
fn nested() -> bool {
    std::env::var_os(ENGINE_DIR_ENV).is_some() || !trtllm::Backend::current().is_simulated()
}

fn text(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_suite_runs_on_the_engine_directory_the_variables_name() {
    if nested() {
        return skip("switch", "already running on a named engine (or the real library)");
    }
    let engine = tempfile::tempdir().unwrap();
    let speculation =
        trtllm::sim::SimulatedSpeculation::new(trtllm::speculative::SpeculativeDecodingMode::Medusa, 4, 0.7);
    write_simulated_engine(engine.path(), |mut e| {
        e.limits.max_beam_width = 1;
        trtllm::sim::SimulatedEngine { lora: None, speculation: Some(speculation), ..e }
    })
    .unwrap();
    // The tokenizer kept apart, as a real model's Hugging Face directory is.
    let tokenizer = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(engine.path().join("tokenizer")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tokenizer.path().join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir_all(engine.path().join("tokenizer")).unwrap();

    let out = run_suite(&[(ENGINE_DIR_ENV, engine.path()), (TOKENIZER_ENV, tokenizer.path())], &[]);
    let log = text(&out);
    assert!(out.status.success(), "the suite failed on the named engine:\n{log}");
    let expected = format!("conformance target: {ENGINE_DIR_ENV}={}", engine.path().display());
    assert!(log.contains(&expected), "the suite did not say it ran on the named engine:\n{log}");
    assert!(log.contains("speculative medusa"), "{log}");
    assert!(log.contains("SKIPPED lora:"), "a LoRA-less engine skips the LoRA test with a reason:\n{log}");
    assert!(log.contains("SKIPPED beam_search"), "{log}");
    assert!(!log.contains("SKIPPED speculative"), "the speculative test ran:\n{log}");
}

#[test]
fn a_broken_engine_or_tokenizer_fails_the_suite_with_the_reason() {
    if nested() {
        return skip("switch", "already running on a named engine (or the real library)");
    }
    let missing = tempfile::tempdir().unwrap().path().join("no-engine");
    let out = run_suite(&[(ENGINE_DIR_ENV, &missing)], &["stream::streaming_and_not"]);
    let log = text(&out);
    assert!(!out.status.success(), "a missing engine directory must fail:\n{log}");
    assert!(log.contains(&format!("{ENGINE_DIR_ENV}={}", missing.display())), "{log}");

    // An engine whose vocabulary is smaller than its tokenizer's: the wrong tokenizer.
    let engine = tempfile::tempdir().unwrap();
    write_simulated_engine(engine.path(), |e| trtllm::sim::SimulatedEngine {
        shape: trtllm::sim::ModelShape { vocab_size: 1000, ..e.shape },
        lora: None,
        ..e
    })
    .unwrap();
    let out = run_suite(&[(ENGINE_DIR_ENV, engine.path())], &["stream::streaming_and_not"]);
    let log = text(&out);
    assert!(!out.status.success(), "a tokenizer larger than the engine's vocabulary must fail:\n{log}");
    assert!(log.contains("wrong tokenizer for this engine"), "{log}");
}

#[test]
fn the_multi_gpu_variables_reach_the_executor_on_a_tp2_engine() {
    if nested() {
        return skip("switch", "already running on a named engine (or the real library)");
    }
    let engine = tempfile::tempdir().unwrap();
    write_simulated_engine(engine.path(), |e| trtllm::sim::SimulatedEngine { tp_size: 2, ..e }).unwrap();
    let worker = engine.path().join("executorWorker");
    let vars: [(&str, &Path); 4] = [
        (ENGINE_DIR_ENV, engine.path()),
        ("TRTLLM_TEST_ORCHESTRATOR", Path::new("1")),
        ("TRTLLM_TEST_WORKER_EXECUTABLE", &worker),
        ("TRTLLM_TEST_DEVICE_IDS", Path::new("0,1")),
    ];
    let out = run_suite(&vars, &["stream::", "cancel::"]);
    let log = text(&out);
    assert!(out.status.success(), "the suite failed on a TP=2 engine in orchestrator mode:\n{log}");
    assert!(log.contains("tp 2 pp 1"), "{log}");

    let bad: [(&str, &Path); 2] = [(ENGINE_DIR_ENV, engine.path()), ("TRTLLM_TEST_DEVICE_IDS", Path::new("0,x"))];
    let out = run_suite(&bad, &["stream::streaming_and_not"]);
    let log = text(&out);
    assert!(!out.status.success() && log.contains("TRTLLM_TEST_DEVICE_IDS=0,x"), "a bad device list must fail:\n{log}");
}
