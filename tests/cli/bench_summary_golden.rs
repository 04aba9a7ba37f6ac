//! The result files keep their names, keys and values: a seeded run on the built-in simulated
//! engine's virtual clock writes the same `<stem>.json` as the golden files in
//! `tests/cli/data/summary_golden/`, byte for byte once the run's date, paths and wall times are
//! masked. Regenerate them (after a deliberate change of the result files) with
//! `TRTLLM_BLESS_GOLDEN=1 cargo test --test integration summary_golden`.

use std::path::{Path, PathBuf};

/// Keys whose values depend on when and where the run happened, not on what it measured.
const VOLATILE_KEYS: [&str; 3] = ["\"date\": ", "\"wall_s\": ", "\"simulated_per_wall\": "];

/// In a closed loop on the virtual clock, a user's next request and the iteration that starts at
/// the same simulated moment race on the host: whether the iteration's stats count it as queued
/// depends on which thread ran first. Open-loop arrivals are scheduled and do not race
/// (`cli::bench_load::scheduled_arrivals_still_to_come_are_not_queued` checks the count).
const CLOSED_LOOP_RACY_KEYS: [&str; 1] = ["\"mean_queued_requests\": "];

/// `text` with the values of `keys` replaced by `<masked>`.
fn mask_values(text: &str, keys: &[&str]) -> String {
    text.lines()
        .map(|line| match keys.iter().find_map(|k| line.find(k).map(|at| at + k.len())) {
            Some(end) => format!("{}<masked>{}", &line[..end], if line.ends_with(',') { "," } else { "" }),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/data/summary_golden")
}

/// The summary text with the temporary directories, the binary's path and the volatile keys'
/// values replaced by placeholders; everything else as written.
fn masked(text: &str, dirs: &[(&Path, &str)]) -> String {
    let mut text = text.replace(env!("CARGO_BIN_EXE_trtllm"), "<trtllm>");
    for (dir, name) in dirs {
        text = text.replace(&dir.display().to_string(), name);
    }
    mask_values(&text, &VOLATILE_KEYS)
}

/// Runs `trtllm bench` with `args` on a virtual-clock copy of the built-in engine and checks each
/// of `stems`' summaries against its golden file.
fn check(scenario: &str, args: &[&str], stems: &[&str]) {
    check_masking(scenario, args, stems, &[]);
}

/// [`check`], with the values of `racy` keys masked in both the run's summary and the golden file.
fn check_masking(scenario: &str, args: &[&str], stems: &[&str], racy: &[&str]) {
    let engine_dir = tempfile::tempdir().unwrap();
    let engine =
        trtllm::sim::SimulatedEngine { clock: trtllm::sim::ClockMode::Virtual, ..trtllm::builtin::builtin_engine() };
    trtllm::builtin::write_engine(&engine, engine_dir.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut all = vec!["--engine-dir", engine_dir.path().to_str().unwrap(), "--quiet"];
    all.extend(["--output-dir", out.path().to_str().unwrap()]);
    all.extend_from_slice(args);
    crate::common::cli::bench(&all);
    let bless = std::env::var_os("TRTLLM_BLESS_GOLDEN").is_some();
    for stem in stems {
        let text = std::fs::read_to_string(out.path().join(format!("{stem}.json"))).unwrap();
        let got = masked(&text, &[(engine_dir.path(), "<engine>"), (out.path(), "<out>")]);
        let got = mask_values(&got, racy);
        let golden = golden_dir().join(format!("{scenario}.{stem}.json"));
        if bless {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&golden, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        let want = mask_values(&want, racy);
        if got != want {
            let line = got.lines().zip(want.lines()).position(|(g, w)| g != w).unwrap_or(0);
            panic!(
                "{stem} differs from {} at line {}:\n got: {}\nwant: {}",
                golden.display(),
                line + 1,
                got.lines().nth(line).unwrap_or("<end>"),
                want.lines().nth(line).unwrap_or("<end>")
            );
        }
    }
}

#[test]
fn summary_golden_a_seeded_sweep_writes_the_same_result_files() {
    let args = [
        "--concurrency",
        "1,4",
        "--input-len",
        "64",
        "--output-len",
        "16",
        "--num-prompts",
        "8",
        "--seed",
        "7",
        "--slo",
        "ttft:200,tpot:20",
        "--input-dist",
        "uniform",
        "--input-stddev",
        "8",
        "--save-detailed",
    ];
    check_masking("sweep", &args, &["c1_in64_out16", "c4_in64_out16"], &CLOSED_LOOP_RACY_KEYS);
}

#[test]
fn summary_golden_sessions_and_open_loop_write_the_same_result_files() {
    let sessions = ["--concurrency", "2", "--turns", "2", "--input-len", "48", "--output-len", "8", "--seed", "3"];
    let args = [&sessions[..], &["--num-prompts", "4"]].concat();
    check_masking("sessions", &args, &["c2_in48_out8"], &CLOSED_LOOP_RACY_KEYS);
    let open = ["--request-rate", "40", "--max-concurrency", "4", "--input-len", "32", "--output-len", "8"];
    check("open", &[&open[..], &["--num-prompts", "12", "--seed", "5"]].concat(), &["r40_mc4_in32_out8"]);
}
