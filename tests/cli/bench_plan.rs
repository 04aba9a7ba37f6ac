//! `trtllm plan` prints the `trtllm bench` line that measures its recommendation, with the same
//! executor settings as its `trtllm serve` line; the line runs, and the summary records them.

use std::process::Command;

use crate::common::cli::read_json;

fn trtllm(args: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trtllm")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().skip(1).map(str::to_owned).collect()
}

#[test]
fn the_recommendations_bench_line_measures_it_with_the_serve_settings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let args = "plan --model tinyllama-1.1b --gpu rtx-a6000 --slo ttft:p95:500,tpot:p95:50 --input-len 96 \
                --output-len 16 --concurrency 1,4 --num-prompts 8 --tp 1 --max-batch-size 4,16 --max-num-tokens 512 \
                --scheduler-policy guaranteed-no-evict --quiet --output-dir";
    let mut argv: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
    argv.push(out.to_str().unwrap().to_owned());
    trtllm(&argv);
    let rec = read_json(&out.join("summary.json"))["recommendation"].clone();
    let (build, serve, bench) =
        (rec["sim_build"].as_str().unwrap(), rec["serve"].as_str().unwrap(), rec["bench"].as_str().unwrap());
    // The same executor flags in both lines.
    let serve_flags = serve.split_once(" --kv").unwrap().1;
    assert!(bench.contains(&format!(" --kv{}", serve_flags.split(" --input-len").next().unwrap())), "{serve}\n{bench}");
    assert!(
        bench.contains("--input-len 96")
            && bench.contains("--output-len 16")
            && bench.contains("--slo ttft:p95:500,tpot:p95:50"),
        "the same SLOs in the grammar both commands read: {bench}"
    );
    trtllm(&words(build));
    let results = dir.path().join("bench");
    let mut bench_args = words(bench);
    bench_args.retain(|w| w != "--repeats" && w != "3");
    bench_args.extend(["--num-prompts", "8", "--output-dir", results.to_str().unwrap()].map(String::from));
    trtllm(&bench_args);
    let load = rec["load"].as_str().unwrap();
    let summary = read_json(&results.join(format!("{load}_in96_out16.json")));
    let settings = &summary["executor_settings"];
    assert_eq!(settings["applies_to"], "the in-process executor");
    let flags: Vec<&str> = settings["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(
        flags.contains(&"--kv-cache-free-gpu-memory-fraction") && flags.contains(&"--scheduler-policy"),
        "{flags:?}"
    );
    assert!((settings["config"]["kv_cache_free_gpu_memory_fraction"].as_f64().unwrap() - 0.9).abs() < 1e-6);
}
