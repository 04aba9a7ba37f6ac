//! `trtllm bench` end to end on a fast simulated engine: files, vLLM keys, executor token counts.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::cli::{bench, read_json};
use serde_json::Value;
use trtllm::text::{ChatMessage, Tokenizer};

const VLLM_KEYS: &[&str] = &[
    "date",
    "endpoint_type",
    "backend",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "max_model_len",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "input_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "failed_requests",
    "mean_ttft_ms",
    "median_ttft_ms",
    "std_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "std_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "std_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "median_e2el_ms",
    "std_e2el_ms",
    "p99_e2el_ms",
];

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Parses an SVG file as XML and returns its `<text>` contents and the point counts of its
/// `<polyline>`s.
fn parse_svg(path: &Path) -> (Vec<String>, Vec<usize>) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_owned()))
        .collect();
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("points"))
        .map(|p| p.split_whitespace().count())
        .collect();
    (texts, lines)
}

/// The built-in engine (with its shipped tokenizer) at 1 ms per iteration.
fn builtin_engine_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let engine = trtllm::sim::SimulatedEngine { iteration_ms: Some(1.0), ..trtllm::builtin::builtin_engine() };
    trtllm::builtin::write_engine(&engine, dir.path()).unwrap();
    dir
}

#[test]
fn a_small_sweep_writes_every_file_with_executor_counts() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--engine-dir", engine.path().to_str().unwrap(), "--concurrency", "1,4"])
        .args(["--input-len", "16", "--output-len", "8", "--num-prompts", "8", "--warmup", "2"])
        .args([
            "--slo",
            "ttft:1000,tpot:100",
            "--label",
            "small-sweep",
            "--save-detailed",
            "--output-dir",
            out.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let table = String::from_utf8_lossy(&status.stdout);
    assert!(table.contains("c=1") && table.contains("c=4"), "{table}");

    for concurrency in [1, 4] {
        let stem = out.path().join(format!("c{concurrency}_in16_out8"));
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(stem.with_extension("json")).unwrap()).unwrap();
        for key in VLLM_KEYS {
            assert!(summary.get(key).is_some(), "summary lacks {key}");
        }
        assert_eq!(summary["completed"], 8);
        assert_eq!(summary["failed"], 0);
        assert_eq!(summary["total_input_tokens"], 8 * 16);
        assert_eq!(summary["max_concurrency"], concurrency);
        assert!(summary["mean_ttft_ms"].as_f64().unwrap() > 0.0);
        assert!(summary["p99_ttft_ms"].as_f64().unwrap() >= summary["median_ttft_ms"].as_f64().unwrap());
        // TPOT: the executor's own stamps give the simulator's 1 ms iterations, one token per response.
        // The client's figure is what the runner saw: a busy host delivers tokens in bursts (a late
        // first token, then a decode that catches up), so it is only checked to be there.
        let server_tpot = num(&summary["server"], "mean_tpot_ms");
        assert!((server_tpot - 1.0).abs() < 0.05, "executor TPOT {server_tpot} ms: {summary}");
        assert!(num(&summary, "mean_tpot_ms") > 0.0, "{summary}");
        assert!((num(&summary, "mean_itl_per_token_ms") - num(&summary, "mean_tpot_ms")).abs() < 1e-6);
        assert!(summary["request_goodput"].as_f64().unwrap() > 0.0);
        assert!(summary["iter"]["count"].as_u64().unwrap() >= 8);
        assert_eq!(summary["iter"]["lost_iterations"], 0);
        assert!(summary["kv"]["max_num_blocks"].as_u64().unwrap() > 0);
        assert_eq!(summary["engine"]["config"]["model_name"], "test-model");
        assert_eq!(summary["engine"]["model_id"], "test-model");
        assert_eq!(summary["metadata"]["crate_version"], env!("CARGO_PKG_VERSION"));
        assert!(summary["metadata"]["backend"].as_str().unwrap().starts_with("simulated"));
        assert_eq!(summary["metadata"]["gpu"], "rtx-a6000", "simulation.json's gpu");
        assert!(num(&summary, "inflight_input_tokens") == (concurrency * 16) as f64, "concurrency × prompt tokens");
        assert!(summary["calibration"]["p99_ttft_error_ms"].as_f64().unwrap() >= 0.0);

        let requests = std::fs::read_to_string(format!("{}.requests.jsonl", stem.display())).unwrap();
        let rows: Vec<Value> = requests.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), 10, "8 measured + 2 warmup");
        assert_eq!(rows.iter().filter(|r| r["phase"] == "warmup").count(), 2);
        assert!(rows.iter().all(|r| r["output_tokens"] == 8 && r["prompt_tokens"] == 16));
        let csv = std::fs::read_to_string(format!("{}.requests.csv", stem.display())).unwrap();
        assert_eq!(csv.lines().count(), 11);
        // An aggregated run has no TTFT split: its disaggregation columns are there, and empty.
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header = reader.headers().unwrap().clone();
        let split: Vec<usize> =
            header.iter().enumerate().filter(|(_, c)| c.starts_with("disagg_")).map(|(i, _)| i).collect();
        assert_eq!(split.len(), 5, "{header:?}");
        for row in reader.records() {
            let row = row.unwrap();
            assert!(split.iter().all(|&i| row[i].is_empty()), "{row:?}");
        }
        let iters = std::fs::read_to_string(format!("{}.iters.jsonl", stem.display())).unwrap();
        assert!(iters.lines().count() >= 8);
        // The total against the executor's own count: one token per scheduled request per
        // iteration of the measured phase (not the configured 8 × 8).
        let executor_tokens: i64 = iters
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|it| {
                let b = &it["inflight_batching"];
                b["num_context_requests"].as_i64().unwrap() + b["num_gen_requests"].as_i64().unwrap()
            })
            .sum();
        assert_eq!(summary["total_output_tokens"], executor_tokens);
        assert!(rows.iter().all(|r| r["finish_reason"] == "length" && r["streaming"] == true));
    }
    let sweep = std::fs::read_to_string(out.path().join("sweep.csv")).unwrap();
    assert_eq!(sweep.lines().count(), 3);
    assert!(sweep.lines().next().unwrap().contains("inflight_input_tokens"));
    let (texts, lines) = parse_svg(&out.path().join("ttft_vs_inflight_tokens.svg"));
    assert!(texts.iter().any(|t| t.starts_with("in=16")), "{texts:?}");
    assert!(lines.contains(&2), "one line through both concurrencies: {lines:?}");
    let (texts, lines) = parse_svg(&out.path().join("latency_vs_throughput.svg"));
    assert!(texts.iter().any(|t| t == "in=16 out=8"), "{texts:?}");
    assert!(lines.contains(&2), "{lines:?}");

    let compare = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "compare", "--allow-different-workloads"])
        .arg(out.path().join("c1_in16_out8.json"))
        .arg(out.path().join("c4_in16_out8.json"))
        .output()
        .unwrap();
    assert!(compare.status.success());
    assert!(String::from_utf8_lossy(&compare.stdout).contains("ttft"));
}

#[test]
fn bad_bench_arguments_exit_with_code_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_trtllm")).args(["bench", "--concurrency", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_target_gives_the_same_token_counts() {
    let server = common::server::TestServer::start(1.0, trtllm::server::ServeOptions::default()).await;
    let out = tempfile::tempdir().unwrap();
    let target = format!("grpc://{}", server.addr);
    let args = ["--concurrency", "4", "--input-len", "16", "--output-len", "8", "--num-prompts", "8", "--warmup", "1"];
    let grpc = tokio::task::spawn_blocking({
        let dir = out.path().join("grpc");
        move || {
            Command::new(env!("CARGO_BIN_EXE_trtllm"))
                .args(["bench", "--target", &target, "--output-dir", dir.to_str().unwrap()])
                .args(args)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(grpc.status.success(), "{}", String::from_utf8_lossy(&grpc.stderr));
    let local = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--engine-dir", server.dir.path().to_str().unwrap(), "--output-dir"])
        .arg(out.path().join("local"))
        .args(args)
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    let read = |sub: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(out.path().join(sub).join("c4_in16_out8.json")).unwrap()).unwrap()
    };
    let (grpc, local) = (read("grpc"), read("local"));
    for key in ["completed", "failed", "total_input_tokens", "total_output_tokens"] {
        assert_eq!(grpc[key], local[key], "{key}");
    }
    assert_eq!(grpc["total_output_tokens"], 64);
    assert!(grpc["server"]["mean_ttft_ms"].as_f64().unwrap() > 0.0, "server times come through the protocol");
    assert_eq!(grpc["metadata"]["target"], format!("grpc://{}", server.addr));
    // The same engine description, from the engine config in process and from
    // GetModelInfo/GetServerInfo over gRPC.
    for key in ["model_id", "max_seq_len", "max_batch_size", "vocab_size", "num_layers", "tp_size"] {
        assert_eq!(grpc["engine"][key], local["engine"][key], "engine.{key}");
    }
    assert_eq!(grpc["engine"]["source"], "GetModelInfo/GetServerInfo");
    // Iteration statistics are not available over gRPC, and say so instead of showing zeros.
    for section in ["kv", "iter"] {
        assert_eq!(grpc[section]["available"], false, "{section}");
        assert!(grpc[section]["reason"].as_str().unwrap().contains("in process"));
        assert_eq!(local[section]["available"], true, "{section}");
    }
    // The same finish-reason words and cached-token counts per request.
    let rows = |sub: &str| -> Vec<Value> {
        std::fs::read_to_string(out.path().join(sub).join("c4_in16_out8.requests.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for row in rows("grpc").iter().chain(rows("local").iter()) {
        assert_eq!(row["finish_reason"], "length");
        assert_eq!(row["cached_tokens"], 0);
    }
    assert_eq!(grpc["total_cached_tokens"], local["total_cached_tokens"]);
}

#[test]
fn ramp_up_and_duration_write_a_time_series_and_its_plot() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    bench(&[
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--concurrency",
        "3",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--ramp-up",
        "0.4",
        "--duration",
        "0.6",
        "--sample-interval",
        "0.2",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let stem = out.path().join("c3_in16_out8");
    let summary = read_json(&stem.with_extension("json"));
    assert!(summary["ramp_up_requests"].as_u64().unwrap() > 0);
    assert!(summary["completed"].as_u64().unwrap() > 0);
    assert_eq!(summary["workload"]["duration_s"], 0.6);
    let series: Vec<Value> = std::fs::read_to_string(format!("{}.timeseries.jsonl", stem.display()))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(series.len() >= 4, "{} samples", series.len());
    assert!(series.iter().all(|s| (num(s, "end_s") - num(s, "start_s") - 0.2).abs() < 1e-9));
    assert!(series.iter().any(|s| num(s, "output_tokens_per_s") > 0.0));
    assert!(series.iter().any(|s| s["kv_utilization"].is_number()));
    let (texts, lines) = parse_svg(Path::new(&format!("{}.timeseries.svg", stem.display())));
    for panel in ["TTFT (ms)", "output tokens/s", "active requests", "KV cache use (%)"] {
        assert!(texts.iter().any(|t| t == panel), "{panel} in {texts:?}");
    }
    assert!(
        lines.iter().filter(|&&n| n == series.len()).count() >= 2,
        "token rate and active requests have a point per sample: {lines:?}"
    );
}

#[test]
fn datasets_report_the_tokens_actually_sent() {
    let engine = builtin_engine_dir();
    let tokenizer = Tokenizer::from_dir(engine.path().join("tokenizer")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let texts = [
        "The executor streams tokens as it makes them.",
        "Benchmarks measure what a user waits for: the first token, then each next one.",
    ];
    let jsonl_text = data.path().join("text.jsonl");
    std::fs::write(
        &jsonl_text,
        format!(
            "{{\"prompt\": {:?}, \"output_len\": 5}}\n{{\"prompt\": {:?}, \"output_len\": 7}}\n",
            texts[0], texts[1]
        ),
    )
    .unwrap();
    let jsonl_ids = data.path().join("ids.jsonl");
    std::fs::write(
        &jsonl_ids,
        "{\"prompt_token_ids\": [5, 6, 7, 8, 9, 10]}\n{\"prompt_token_ids\": [11, 12, 13, 14, 15, 16]}\n",
    )
    .unwrap();
    let sharegpt = data.path().join("sharegpt.json");
    let reply = "Tokens are counted by the executor, never by re-tokenizing its text.";
    std::fs::write(
        &sharegpt,
        serde_json::json!([
            {"id": "a", "conversations": [{"from": "human", "value": texts[0]}, {"from": "gpt", "value": reply}]},
            {"id": "b", "conversations": [{"from": "human", "value": texts[0]}, {"from": "gpt", "value": reply}]},
        ])
        .to_string(),
    )
    .unwrap();

    let run = |dataset: &str, path: &Path, extra: &[&str]| -> Value {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--engine-dir",
            engine.path().to_str().unwrap(),
            "--dataset",
            dataset,
            "--dataset-path",
            path.to_str().unwrap(),
            "--concurrency",
            "2",
            "--num-prompts",
            "4",
            "--warmup",
            "0",
            "--output-dir",
            out.path().to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        bench(&args);
        let summary = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "json"))
            .unwrap();
        read_json(&summary)
    };
    let count = |text: &str| tokenizer.encode(text, true).unwrap().len() as f64;

    // JSONL text: each prompt drawn twice (4 requests over 2 entries), its own output length.
    let s = run("jsonl", &jsonl_text, &[]);
    assert_eq!(s["num_prompts"], 4);
    assert!((num(&s, "mean_prompt_tokens") - (count(texts[0]) + count(texts[1])) / 2.0).abs() < 1e-9);
    assert_eq!(s["total_output_tokens"], 2 * (5 + 7));
    assert_eq!(s["output_len_mismatches"], 0);
    assert_eq!(s["workload"]["output_len"], "dataset");
    // --output-len overrides the file's lengths.
    let s = run("jsonl", &jsonl_text, &["--output-len", "3"]);
    assert_eq!((s["min_output_tokens"].clone(), s["max_output_tokens"].clone()), (3.into(), 3.into()));

    // A chat template adds its own tokens around the prompt.
    let s = run("jsonl", &jsonl_text, &["--chat-template"]);
    let template = tokenizer.chat_template().unwrap();
    let templated = |t: &str| {
        let rendered = template.render(&[ChatMessage::user(t)], true).unwrap();
        tokenizer.encode(&rendered, false).unwrap().len() as f64
    };
    assert!((num(&s, "mean_prompt_tokens") - (templated(texts[0]) + templated(texts[1])) / 2.0).abs() < 1e-9);
    assert!(num(&s, "mean_prompt_tokens") > (count(texts[0]) + count(texts[1])) / 2.0);

    // JSONL token ids: sent as they are.
    let s = run("jsonl", &jsonl_ids, &["--output-len", "4"]);
    assert_eq!(s["total_input_tokens"], 4 * 6);
    assert_eq!(s["total_output_tokens"], 4 * 4);

    // ShareGPT: the first human turn, and the reply's token count as the output length.
    let s = run("sharegpt", &sharegpt, &[]);
    assert!((num(&s, "mean_prompt_tokens") - count(texts[0])).abs() < 1e-9);
    let reply_len = tokenizer.encode(reply, false).unwrap().len() as u64;
    assert_eq!(s["total_output_tokens"].as_u64().unwrap(), 4 * reply_len);
}

#[test]
fn bad_workload_combinations_are_refused_with_a_reason() {
    for (args, needle) in [
        (vec!["--dataset", "jsonl"], "--dataset-path"),
        (vec!["--ramp-up", "1"], "--duration"),
        (vec!["--burstiness", "2"], "--request-rate"),
        (vec!["--request-rate", "0"], "positive"),
        (vec!["--concurrency", "4", "--request-rate", "2"], "cannot be used with"),
        (vec!["--chat-template"], "text datasets"),
        (vec!["--concurrency", "2", "--max-concurrency", "2"], "--request-rate or --dataset trace"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_trtllm")).arg("bench").args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn a_trace_replay_keeps_to_max_concurrency() {
    let engine = builtin_engine_dir();
    let data = tempfile::tempdir().unwrap();
    // Four requests 1 ms apart, each far longer than that at 1 ms per iteration.
    let trace = data.path().join("trace.jsonl");
    let lines: Vec<String> = (0..4)
        .map(|i| format!("{{\"timestamp\": {i}, \"input_length\": 24, \"output_length\": 12, \"hash_ids\": [1]}}"))
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let out = tempfile::tempdir().unwrap();
    bench(&[
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--dataset",
        "trace",
        "--dataset-path",
        trace.to_str().unwrap(),
        "--trace-block-size",
        "16",
        "--max-concurrency",
        "1",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let summary = read_json(&out.path().join("trace_mc1_trace_outds.json"));
    assert_eq!(summary["completed"], 4);
    assert_eq!(summary["max_concurrency"], 1);
    assert_eq!(summary["workload"]["max_concurrency"], 1);
    assert_eq!(summary["max_concurrent_requests"], 1, "one request in flight at a time");
    // Three requests waited for the slot, and the wait is reported both ways.
    assert!(num(&summary, "p99_dispatch_delay_ms") > 5.0, "{summary}");
    assert!(num(&summary, "p99_client_queue_time_ms") > 5.0, "{summary}");
}

#[test]
fn quiet_leaves_out_the_setup_lines_and_the_view() {
    let engine = builtin_engine_dir();
    let out = tempfile::tempdir().unwrap();
    let run = |quiet: &[&str]| common::cli::small_bench(engine.path(), out.path(), quiet);
    let quiet = run(&["--quiet"]);
    // Progress lines, if the point lasts their 5 s, are all it may print there.
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(stderr.lines().all(|line| line.contains(" done, ") && line.contains(" in flight, ")), "{stderr}");
    let table = String::from_utf8_lossy(&quiet.stdout);
    assert!(table.contains("c=2") && table.contains("results in"), "{table}");
    let told = run(&[]);
    assert!(String::from_utf8_lossy(&told.stderr).contains("engine "), "without --quiet the setup is told");
}
