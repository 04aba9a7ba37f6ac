//! Behaviour of the benchmark metrics a runner and its users rely on: numpy-compatible
//! statistics, vLLM-compatible summary keys, result files, plots and comparison.

use proptest::prelude::*;
use serde_json::{Value, json};
use trtllm::bench::*;

/// A successful streamed request: first chunk `ttft` after `send`, then chunks after `gaps`,
/// each chunk carrying the given number of tokens.
fn streamed(index: u64, send: f64, ttft: f64, chunks: &[(f64, u32)]) -> RequestRecord {
    let mut r = RequestRecord::new(index, Phase::Measure, send);
    r.prompt_tokens = 100;
    let mut t = send + ttft;
    for (i, &(gap, tokens)) in chunks.iter().enumerate() {
        if i > 0 {
            t += gap;
        }
        r.record_chunk(t, tokens);
    }
    r.finish(t, r.chunk_tokens(), Some("length".into()));
    r
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number: {}", v[key]))
}

/// JSON equality up to float parsing: serde_json (without its `float_roundtrip` feature) may
/// read a written float back one ulp off.
fn assert_json_close(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(close(x, y), "{at}: {x} != {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: array lengths");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_json_close(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{at}: keys");
            for (k, v) in x {
                assert_json_close(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// Every record of `text`, read by the `csv` crate as the oracle for our writer: RFC 4180 quoting,
/// CRLF or LF line ends, and the same number of fields in every record (else the test fails).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|record| record.expect("a well-formed CSV record").iter().map(String::from).collect())
        .collect()
}

/// Position of a column of the per-request CSV.
fn request_column(name: &str) -> usize {
    REQUEST_CSV_COLUMNS.iter().position(|c| *c == name).unwrap()
}

/// Parses an SVG document as XML (failing the test if it is not well-formed) and counts its
/// `<polyline>` elements that have exactly `n` points.
fn polylines_with_points(svg: &str, n: usize) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|node| node.has_tag_name("polyline"))
        .filter_map(|node| node.attribute("points"))
        .filter(|points| points.split_whitespace().count() == n)
        .count()
}

/// The text of every `<text>` element of an SVG document (titles, axis labels, legends).
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    doc.descendants()
        .filter(|node| node.has_tag_name("text"))
        .filter_map(|node| node.text().map(|t| t.trim().to_owned()))
        .collect()
}

// --- statistics -------------------------------------------------------------------------

const SAMPLE: [f64; 13] = [0.7, 12.5, 3.25, 8.0, 8.0, 1e-3, 42.0, 5.5, 19.75, 2.0, 6.125, 30.5, 0.25];

#[test]
fn percentiles_match_numpy_default() {
    // Reference values printed by numpy 2.x: np.percentile(SAMPLE, p) (method="linear").
    let expected = [
        (0.0, 0.001),
        (1.0, 0.03088),
        (10.0, 0.3400000000000001),
        (25.0, 2.0),
        (33.3, 3.244999999999999),
        (50.0, 6.125),
        (66.6, 8.0),
        (75.0, 12.5),
        (90.0, 28.35000000000001),
        (95.0, 35.09999999999998),
        (99.0, 40.61999999999999),
        (99.9, 41.862000000000016),
        (100.0, 42.0),
    ];
    for (p, want) in expected {
        let got = percentile(&SAMPLE, p).unwrap();
        assert!(close(got, want), "p{p}: got {got}, numpy {want}");
    }
    assert!(close(mean(&SAMPLE).unwrap(), 10.659692307692307));
    assert!(close(std_dev(&SAMPLE).unwrap(), 12.32341612468915));
    assert_eq!(median(&SAMPLE), Some(6.125));
    let even = &SAMPLE[..12];
    assert!(close(median(even).unwrap(), 7.0625));
    assert!(close(percentile(even, 99.9).unwrap(), 41.87350000000001));
    assert!(close(std_dev(even).unwrap(), 12.439432495317282));
}

#[test]
fn percentile_interpolation_by_hand() {
    // Sorted 10 20 30 40: rank for p95 = 3 * 0.95 = 2.85 → 30 + 0.85 * 10 = 38.5.
    let v = [40.0, 10.0, 30.0, 20.0];
    assert!(close(percentile(&v, 95.0).unwrap(), 38.5));
    // rank for p10 = 0.3 → 10 + 0.3 * 10 = 13.
    assert!(close(percentile(&v, 10.0).unwrap(), 13.0));
    // Nearest rank: ceil(0.95 * 4) - 1 = 3 → 40; ceil(0.10 * 4) - 1 = 0 → 10.
    assert_eq!(percentile_nearest_rank(&v, 95.0), Some(40.0));
    assert_eq!(percentile_nearest_rank(&v, 10.0), Some(10.0));
}

// --- per-request metrics through the summary ----------------------------------------------

#[test]
fn tpot_excludes_one_token_requests() {
    let records = [
        streamed(0, 0.0, 0.1, &[(0.0, 1), (0.02, 1), (0.02, 1)]), // tpot 20 ms
        streamed(1, 0.0, 0.2, &[(0.0, 1)]),                       // one token: no tpot
        streamed(2, 0.0, 0.1, &[(0.0, 1), (0.04, 1)]),            // tpot 40 ms
    ];
    let s = Summary::builder(RunInfo::default()).build(&records).unwrap();
    assert_eq!(s.tpot.count(), 2);
    assert!(close(s.tpot.mean().unwrap(), 30.0));
    assert_eq!(s.ttft.count(), 3);
    let json = s.to_json();
    assert!(close(num(&json, "mean_tpot_ms"), 30.0));
    assert!(close(num(&json, "median_ttft_ms"), 100.0));
}

#[test]
fn per_token_itl_splits_multi_token_chunks() {
    // Chunks: 2 tokens at 100 ms, 4 tokens 80 ms later, 1 token 10 ms later.
    let r = streamed(0, 0.0, 0.1, &[(0.0, 2), (0.08, 4), (0.01, 1)]);
    let s = Summary::builder(RunInfo::default()).percentiles(&[50.0, 100.0]).build(std::slice::from_ref(&r)).unwrap();
    // vLLM per-chunk ITL: two gaps, 80 and 10 ms.
    assert_eq!(s.itl.sorted_samples().len(), 2);
    assert!(close(s.itl.max().unwrap(), 80.0));
    // Per token: 0 (rode with the first token), 20 x4, 10 → 6 values = output_tokens - 1.
    let per_token = s.itl_per_token.sorted_samples();
    assert_eq!(per_token.len(), 6);
    assert!(close(per_token[0], 0.0));
    assert!(close(per_token[1], 10.0));
    assert!(per_token[2..].iter().all(|&v| close(v, 20.0)));
    // Its mean equals TPOT: (190 - 100) ms / (7 - 1).
    assert!(close(s.itl_per_token.mean().unwrap(), s.tpot.mean().unwrap()));
    let json = s.to_json();
    assert!(close(num(&json, "p100_itl_per_token_ms"), 20.0));
    assert!(close(num(&json, "p100_itl_ms"), 80.0));
}

#[test]
fn goodput_counts_requests_meeting_every_slo() {
    let records = [
        streamed(0, 0.0, 0.05, &[(0.0, 1), (0.01, 1)]), // ttft 50, tpot 10 → good
        streamed(1, 0.0, 0.30, &[(0.0, 1), (0.01, 1)]), // ttft 300 → bad
        streamed(2, 0.0, 0.05, &[(0.0, 1), (0.09, 1)]), // tpot 90 → bad
        streamed(3, 1.0, 0.08, &[(0.0, 1)]),            // 1 token: tpot 0 → good
    ];
    let slos = Slos::parse("ttft:100,tpot:50").unwrap();
    let s = Summary::builder(RunInfo::default()).slos(slos).build(&records).unwrap();
    let json = s.to_json();
    let duration = num(&json, "duration");
    assert!(close(duration, 1.08)); // first send 0.0, last completion 1.08
    assert!(close(num(&json, "request_goodput"), 2.0 / duration));
    assert!(close(num(&json, "request_throughput"), 4.0 / duration));
    assert_eq!(json["goodput_slos"], "ttft:100,tpot:50");
    assert!(Slos::parse("ttft:100,tpot").is_err());
}

#[test]
fn max_output_tokens_per_s_uses_one_second_buckets() {
    // First send at 2.0: bucket k covers [2 + k, 3 + k).
    let records = [
        streamed(0, 2.0, 0.5, &[(0.0, 3), (0.4, 2)]), // 2.5 → b0 (3), 2.9 → b0 (2)
        streamed(1, 2.2, 0.9, &[(0.0, 4), (1.0, 6)]), // 3.1 → b1 (4), 4.1 → b2 (6)
        streamed(2, 2.3, 0.8, &[(0.0, 1)]),           // 3.1 → b1 (1)
    ];
    let json = Summary::builder(RunInfo::default()).build(&records).unwrap().to_json();
    // vLLM counts one per streamed response (b0: 2, b1: 2, b2: 1) ...
    assert_eq!(num(&json, "max_output_tokens_per_s"), 2.0);
    // ... the by-token variant counts every token (b0: 5, b1: 5, b2: 6).
    assert_eq!(num(&json, "max_output_tokens_per_s_by_token"), 6.0);
    assert_eq!(json["max_concurrent_requests"], 3);
    assert_eq!(json["total_output_tokens"], 16);
}

#[test]
fn failed_requests_are_excluded_and_listed() {
    let good = streamed(0, 0.0, 0.1, &[(0.0, 1), (0.01, 1)]);
    let mut partial = streamed(1, 0.0, 0.02, &[(0.0, 1), (0.01, 1)]);
    partial.error = Some("executor error: out of KV blocks".into());
    partial.end_s = Some(0.5);
    let mut early = RequestRecord::new(2, Phase::Measure, 0.1);
    early.prompt_tokens = 9000;
    early.fail(0.15, "prompt longer than max_input_len");
    let s = Summary::builder(RunInfo::default()).detailed(true).build(&[good, partial, early]).unwrap();
    let json = s.to_json();
    assert_eq!(json["completed"], 1);
    assert_eq!(json["failed"], 2);
    assert_eq!(json["total_input_tokens"], 100);
    assert!(close(num(&json, "mean_ttft_ms"), 100.0));
    assert!(close(num(&json, "duration"), 0.5));
    let failed = json["failed_requests"].as_array().unwrap();
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0]["index"], 1);
    assert_eq!(failed[0]["output_tokens"], 2);
    assert!(close(num(&failed[0], "ttft"), 0.02));
    assert!(close(num(&failed[0], "latency"), 0.5)); // to the error, not the last token
    assert_eq!(failed[1]["error"], "prompt longer than max_input_len");
    assert_eq!(failed[1]["prompt_len"], 9000);
    assert_eq!(failed[1]["ttft"], 0.0);
    assert!(close(num(&failed[1], "latency"), 0.05));
    assert_eq!(json["errors"], json!(["", "executor error: out of KV blocks", "prompt longer than max_input_len"]));
    assert_eq!(json["output_lens"], json!([2, 0, 0]));
}

#[test]
fn warmup_requests_are_excluded_from_every_statistic() {
    let mut warm = streamed(0, 0.0, 5.0, &[(0.0, 50), (3.0, 50)]);
    warm.phase = Phase::Warmup;
    let measured = streamed(1, 10.0, 0.1, &[(0.0, 1), (0.01, 1)]);
    let with = Summary::builder(RunInfo::default()).build(&[warm, measured.clone()]).unwrap().to_json();
    let without = Summary::builder(RunInfo::default()).build(&[measured]).unwrap().to_json();
    for key in [
        "completed",
        "duration",
        "total_output_tokens",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "mean_ttft_ms",
        "p99_itl_ms",
        "mean_e2el_ms",
        "request_throughput",
    ] {
        assert_eq!(with[key], without[key], "{key}");
    }
    assert_eq!(with["warmup_requests"], 1);
    assert_eq!(with["num_prompts"], 1);
}

// --- the summary JSON ---------------------------------------------------------------------

const VLLM_KEYS: [&str; 24] = [
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
];

const DETAILED_KEYS: [&str; 7] = ["input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors"];

fn sample_records() -> Vec<RequestRecord> {
    let mut records: Vec<RequestRecord> = (0..20)
        .map(|i| {
            let gaps: Vec<(f64, u32)> = (0..(i % 5 + 1)).map(|k| (0.01 + k as f64 * 0.001, 1)).collect();
            streamed(i, i as f64 * 0.05, 0.05 + i as f64 * 0.002, &gaps)
        })
        .collect();
    records[3].fail(0.4, "cancelled by client");
    records
}

#[test]
fn summary_has_every_vllm_key_with_vllm_types() {
    let run = RunInfo {
        label: Some("trtllm-c8".into()),
        model_id: "org/tiny".into(),
        tokenizer_id: Some("org/tiny".into()),
        max_model_len: Some(4096),
        max_concurrency: Some(8),
        ..RunInfo::default()
    };
    let json = Summary::builder(run)
        .percentiles(&[50.0, 90.0, 95.0, 99.0, 99.9])
        .slos(Slos::parse("e2el:1000").unwrap())
        .detailed(true)
        .engine(EngineSection { backend: Some("simulated tiny".into()), ..EngineSection::new("a test") })
        .workload(WorkloadSection { dataset: "random".into(), seed: 0, ..WorkloadSection::default() })
        .kv(Availability::Unavailable("not measured here".into()))
        .iter(Availability::Unavailable("not measured here".into()))
        .prediction(PredictionSection {
            model: json!({"tpot_ms": 1.0}).as_object().cloned().unwrap(),
            ..PredictionSection::default()
        })
        .metadata(RunMetadata { crate_version: "0.1.0".into(), ..RunMetadata::default() })
        .build(&sample_records())
        .unwrap()
        .to_json();
    let mut keys: Vec<String> = VLLM_KEYS.iter().map(|k| k.to_string()).collect();
    keys.extend(DETAILED_KEYS.iter().map(|k| k.to_string()));
    for metric in ["ttft", "tpot", "itl", "e2el"] {
        for stat in ["mean", "median", "std", "p50", "p90", "p95", "p99", "p99.9"] {
            keys.push(format!("{stat}_{metric}_ms"));
        }
    }
    for key in &keys {
        assert!(json.get(key).is_some(), "missing vLLM key {key}");
    }
    // Types as vLLM writes them.
    assert!(json["date"].as_str().is_some_and(|d| d.len() == 15 && d.as_bytes()[8] == b'-'));
    assert_eq!(json["endpoint_type"], json["backend"]);
    assert_eq!(json["request_rate"], "inf");
    assert_eq!(json["max_concurrency"], 8);
    assert_eq!(json["max_model_len"], 4096);
    assert!(json["request_goodput"].is_f64());
    for k in ["completed", "failed", "total_input_tokens", "total_output_tokens", "max_concurrent_requests"] {
        assert!(json[k].is_u64(), "{k} should be an integer");
    }
    assert_eq!(json["completed"].as_u64().unwrap() + json["failed"].as_u64().unwrap(), 20);
    for k in DETAILED_KEYS {
        assert_eq!(json[k].as_array().map(Vec::len), Some(20), "{k}");
    }
    // Additions live under new keys.
    for k in ["engine", "workload", "kv", "iter", "prediction", "metadata"] {
        assert!(json[k].is_object(), "{k}");
    }
    for k in ["mean_itl_per_token_ms", "p99.9_itl_per_token_ms", "p99_client_queue_time_ms"] {
        assert!(json[k].is_f64(), "{k}");
    }
    // Closed-loop run: no schedule, so no dispatch-delay keys.
    assert!(json.get("mean_dispatch_delay_ms").is_none());
}

#[test]
fn detailed_arrays_only_when_asked() {
    let json = Summary::builder(RunInfo::default()).build(&sample_records()).unwrap().to_json();
    for k in DETAILED_KEYS {
        assert!(json.get(k).is_none(), "{k} without detailed output");
    }
    assert_eq!(json["request_goodput"], Value::Null);
}

#[test]
fn open_loop_reports_dispatch_delay_and_client_queue() {
    let mut records = sample_records();
    for (i, r) in records.iter_mut().enumerate() {
        r.scheduled_send_s = Some(r.send_s - 0.001 * i as f64);
        r.client_queue_s = 0.002;
    }
    let run = RunInfo { request_rate: 20.0, burstiness: 0.5, ..RunInfo::default() };
    let json = Summary::builder(run).percentiles(&[100.0]).build(&records).unwrap().to_json();
    assert_eq!(json["request_rate"], 20.0);
    assert_eq!(json["burstiness"], 0.5);
    assert!(close(num(&json, "p100_dispatch_delay_ms"), 19.0)); // index 19 is a success
    assert!(close(num(&json, "mean_client_queue_time_ms"), 2.0));
}

// --- files --------------------------------------------------------------------------------

#[test]
fn result_files_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let files = ResultFiles::new(dir.path().join("sweep").join("c8-in100"));
    let mut records = sample_records();
    records[0].phase = Phase::Warmup;
    records[5].server = Some(ServerTimes {
        arrival_s: Some(0.26),
        first_scheduled_s: Some(0.27),
        first_token_s: Some(0.29),
        last_token_s: Some(0.35),
        ..ServerTimes::default()
    });
    let summary = Summary::builder(RunInfo::default()).build(&records).unwrap();
    let path = files.write_summary(&summary).unwrap();
    let back: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_json_close(&back, &summary.to_json(), "summary");
    assert_eq!(back["server"]["requests"], 1);

    files.write_requests(&records).unwrap();
    let jsonl = std::fs::read_to_string(files.requests_jsonl_path()).unwrap();
    let parsed: Vec<RequestRecord> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_json_close(&json!(parsed), &json!(records), "requests");

    let csv = parse_csv(&std::fs::read_to_string(files.requests_csv_path()).unwrap());
    assert_eq!(csv.len(), records.len() + 1);
    assert_eq!(csv[0], REQUEST_CSV_COLUMNS.map(String::from).to_vec());
    let col = |name: &str| REQUEST_CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
    assert_eq!(csv[1][col("phase")], "warmup");
    assert_eq!(csv[2][col("phase")], "measure");
    assert_eq!(csv[4][col("error")], "cancelled by client");
    let ttft: f64 = csv[6][col("ttft_ms")].parse().unwrap();
    assert!(close(ttft, records[5].ttft_s().unwrap() * 1000.0));
    assert!(!csv[6][col("server_ttft_ms")].is_empty());
    assert!(csv[7][col("server_ttft_ms")].is_empty());

    let iters = [json!({"iter": 1, "numActiveRequests": 3}), json!({"iter": 2})];
    let path = files.write_iterations(&iters).unwrap();
    let lines: Vec<Value> =
        std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines, iters);
}

#[test]
fn csv_quoting_survives_hostile_text() {
    let nasty = "bad \"input\", line1\r\nline2\n, trailing ";
    let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
    r.fail(1.0, nasty);
    r.finish_reason = Some("a,b".into());
    let rows = parse_csv(&requests_csv(&[r]));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].len(), REQUEST_CSV_COLUMNS.len());
    assert_eq!(rows[1][request_column("error")], nasty);
    assert_eq!(rows[1][request_column("finish_reason")], "a,b");
}

#[test]
fn sweep_csv_and_table_have_one_row_per_point() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<SweepRow> = [1u64, 4, 16]
        .iter()
        .map(|&c| {
            let run = RunInfo { max_concurrency: Some(c), ..RunInfo::default() };
            let s = Summary::builder(run).build(&sample_records()).unwrap();
            SweepRow::from_summary(&s).with_shape(100, 3)
        })
        .collect();
    let path = dir.path().join("sweep.csv");
    write_sweep_csv(&path, &rows).unwrap();
    let csv = parse_csv(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(csv.len(), 4);
    let column = |name: &str| csv[0].iter().position(|c| c == name).unwrap();
    assert_eq!(csv[3][column("concurrency")], "16");
    assert_eq!(csv[3][column("input_len")], "100");
    assert_eq!(csv[3][column("failed")], "1");
    // In-flight input-token pressure: concurrency × actual mean prompt tokens.
    let pressure: f64 = csv[3][column("inflight_input_tokens")].parse().unwrap();
    assert!(close(pressure, 16.0 * rows[2].mean_prompt_tokens));
    let table = console_table(&rows);
    assert_eq!(table.lines().count(), 5);
    for needle in ["c=1", "c=4", "c=16", "p99 TTFT", "p50 TPOT", "p99 ITL", "out tok/s"] {
        assert!(table.contains(needle), "{needle}\n{table}");
    }
}

// --- plots --------------------------------------------------------------------------------

#[test]
fn pressure_plot_has_one_line_per_prompt_length() {
    let mut points = Vec::new();
    for len in [128u64, 1024, 4096] {
        for c in [1u64, 2, 4, 8, 16] {
            points.push(PressurePoint::closed(len, c, len as f64 + 3.0, (c * len) as f64 / 100.0));
        }
    }
    let svg = plot_ttft_vs_inflight_tokens(&points).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(polylines_with_points(&svg, 5), 3, "one 5-point line per prompt length");
    let texts = svg_texts(&svg);
    for label in ["in=128", "in=1024", "in=4096", "p95 TTFT (ms)"] {
        assert!(texts.iter().any(|t| t == label), "{label} in {texts:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plots").join("ttft.svg");
    write_svg(&path, &svg).unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), svg);
}

#[test]
fn latency_throughput_plot_from_sweep_rows() {
    let mut rows = Vec::new();
    for (input, output) in [(128u64, 128u64), (2048, 256)] {
        for c in [1u64, 2, 4, 8] {
            rows.push(
                SweepRow {
                    concurrency: Some(c),
                    output_throughput: 50.0 * c as f64,
                    p50_tpot_ms: Some(5.0 + c as f64),
                    p50_ttft_ms: Some(20.0 * c as f64),
                    ..SweepRow::default()
                }
                .with_shape(input, output),
            );
        }
    }
    for metric in [LatencyMetric::P50Tpot, LatencyMetric::P50Ttft] {
        let points = LatencyThroughputPoint::from_rows(&rows, metric);
        let svg = plot_latency_vs_throughput(&points, metric).unwrap();
        assert_eq!(polylines_with_points(&svg, 4), 2);
        let texts = svg_texts(&svg);
        assert!(texts.iter().any(|t| t == "in=128 out=128"), "{texts:?}");
        assert!(texts.iter().any(|t| t == "in=2048 out=256"), "{texts:?}");
    }
}

#[test]
fn time_series_plot_has_four_panels() {
    let records = sample_records();
    let mut samples = time_series(&records, 0.25).unwrap();
    assert!(samples.len() >= 4);
    let kv: Vec<(f64, f64)> = samples.iter().map(|s| (s.start_s, 0.3)).collect();
    fill_kv_utilization(&mut samples, &kv);
    let n = samples.len();
    let ttft_points = samples.iter().filter(|s| s.mean_ttft_ms.is_some()).count();
    let svg = plot_time_series(&samples).unwrap();
    let texts = svg_texts(&svg);
    for caption in ["TTFT (ms)", "output tokens/s", "active requests", "KV cache use (%)"] {
        assert!(texts.iter().any(|t| t == caption), "{caption} in {texts:?}");
    }
    // Token rate, active requests and KV use have a point per sample; TTFT only where a first
    // token arrived.
    let expected = if ttft_points == n { 4 } else { 3 };
    assert_eq!(polylines_with_points(&svg, n), expected);
    // Tokens received over the series equal the tokens streamed.
    let tokens: f64 = samples.iter().map(|s| s.output_tokens_per_s * 0.25).sum();
    let streamed_tokens: u64 = records.iter().map(RequestRecord::chunk_tokens).sum();
    assert!(close(tokens, streamed_tokens as f64));
}

// --- compare ------------------------------------------------------------------------------

#[test]
fn compare_reports_ratios_of_two_summaries() {
    let a = Summary::builder(RunInfo { label: Some("base".into()), ..RunInfo::default() })
        .build(&sample_records())
        .unwrap();
    let faster: Vec<RequestRecord> = sample_records()
        .into_iter()
        .map(|mut r| {
            // Same work in half the time.
            let s = r.send_s;
            let scale = |t: f64| s / 2.0 + (t - s) / 2.0;
            r.send_s = s / 2.0;
            r.first_token_s = r.first_token_s.map(scale);
            r.end_s = r.end_s.map(scale);
            for c in &mut r.chunks {
                c.t_s = scale(c.t_s);
            }
            r
        })
        .collect();
    let b = Summary::builder(RunInfo { label: Some("fast".into()), ..RunInfo::default() }).build(&faster).unwrap();
    let text = compare(&a.to_json(), &b.to_json());
    assert!(text.starts_with("A: base"));
    let ratio = |key: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("{key} missing:\n{text}"));
        line.split_whitespace().last().unwrap().to_owned()
    };
    assert_eq!(ratio("output_throughput"), "2.000");
    assert_eq!(ratio("p99_ttft_ms"), "0.500");
    assert_eq!(ratio("mean_e2el_ms"), "0.500");
    assert_eq!(ratio("completed"), "1.000");
}

// --- non-streaming, failures by finish reason, calibration --------------------------------

/// A successful non-streaming request: one response, `latency` after `send`.
fn non_streaming(index: u64, send: f64, latency: f64, tokens: u64) -> RequestRecord {
    let mut r = RequestRecord::new(index, Phase::Measure, send);
    r.streaming = false;
    r.prompt_tokens = 100;
    r.finish(send + latency, tokens, Some("length".into()));
    r
}

#[test]
fn non_streaming_runs_report_e2e_and_tokens_per_s_but_no_ttft() {
    let records = [non_streaming(0, 0.0, 2.0, 100), non_streaming(1, 0.5, 4.0, 100)];
    let summary = Summary::builder(RunInfo::default())
        .percentiles(&[50.0])
        .slos(Slos::parse("ttft:1,tpot:1,e2el:3000").unwrap())
        .build(&records)
        .unwrap();
    let json = summary.to_json();
    // The first token of a non-streaming request is not observable: no TTFT, TPOT or ITL keys
    // (rather than TTFT == E2E and TPOT == 0).
    for key in json.as_object().unwrap().keys() {
        for metric in ["_ttft_", "_tpot_", "_itl_"] {
            assert!(!key.contains(metric), "{key} in a non-streaming summary");
        }
    }
    assert_eq!(json["streaming"], false);
    assert!(close(num(&json, "mean_e2el_ms"), 3000.0));
    // 100 tokens in 2 s and in 4 s.
    assert!(close(num(&json, "mean_request_output_tok_s"), 37.5));
    assert!(close(num(&json, "p50_request_output_tok_s"), 37.5));
    // Goodput holds requests to the E2E limit only; the others are reported as not applicable.
    let duration = num(&json, "duration");
    assert!(close(num(&json, "request_goodput"), 1.0 / duration));
    assert_eq!(json["goodput_slos"], "e2el:3000");
    assert_eq!(json["goodput_slos_not_applicable"], "ttft:1,tpot:1");
    // Without any applicable limit there is no goodput at all.
    let json =
        Summary::builder(RunInfo::default()).slos(Slos::parse("tpot:1").unwrap()).build(&records).unwrap().to_json();
    assert_eq!(json["request_goodput"], Value::Null);
    let row = SweepRow::from_summary(&Summary::builder(RunInfo::default()).build(&records).unwrap());
    assert_eq!((row.p50_ttft_ms, row.p50_tpot_ms), (None, None));
    assert!(close(row.p50_e2el_ms.unwrap(), 3000.0));
}

#[test]
fn cancelled_and_timed_out_requests_are_failures() {
    let mut cancelled = streamed(0, 0.0, 0.1, &[(0.0, 1), (0.01, 1)]);
    cancelled.finish(0.2, 2, Some("abort".into()));
    let mut timed_out = streamed(1, 0.0, 0.1, &[(0.0, 1)]);
    timed_out.finish(0.3, 1, Some("timeout".into()));
    let done = streamed(2, 0.0, 0.1, &[(0.0, 1), (0.01, 1)]);
    assert!(!cancelled.is_success() && !timed_out.is_success() && done.is_success());
    let json = Summary::builder(RunInfo::default()).build(&[cancelled, timed_out, done]).unwrap().to_json();
    assert_eq!(json["completed"], 1);
    assert_eq!(json["failed"], 2);
    assert_eq!(json["total_output_tokens"], 2);
    let errors: Vec<&str> =
        json["failed_requests"].as_array().unwrap().iter().map(|f| f["error"].as_str().unwrap()).collect();
    assert!(errors[0].contains("abort") && errors[1].contains("timeout"), "{errors:?}");
}

#[test]
fn output_length_mismatches_and_actual_token_counts() {
    let mut records: Vec<RequestRecord> =
        (0..4).map(|i| streamed(i, 0.0, 0.1, &vec![(0.01, 1); 3 + i as usize])).collect();
    for (i, r) in records.iter_mut().enumerate() {
        r.prompt_tokens = 10 + i as u64;
        r.expected_output_tokens = Some(4);
        r.cached_tokens = 2 * i as u64;
    }
    let json =
        Summary::builder(RunInfo { max_concurrency: Some(2), ..RunInfo::default() }).build(&records).unwrap().to_json();
    // Output lengths 3, 4, 5, 6 against an expected 4: three mismatches.
    assert_eq!(json["output_len_mismatches"], 3);
    assert_eq!(json["min_output_tokens"], 3);
    assert_eq!(json["max_output_tokens"], 6);
    assert!(close(num(&json, "mean_prompt_tokens"), 11.5));
    assert_eq!(json["total_cached_tokens"], 12);
    // In-flight input-token pressure: concurrency 2 × 11.5 prompt tokens.
    assert!(close(num(&json, "inflight_input_tokens"), 23.0));
}

#[test]
fn calibration_keys_separate_measurement_error_from_queueing() {
    // The executor took the request off its queue 40 ms after the send and stamped the first
    // token at 0.300; the runner saw it 2 ms later, and later responses 1 ms late each.
    let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
    r.prompt_tokens = 8;
    r.record_chunk_handled(0.302, 1, 0.3021);
    r.record_chunk_handled(0.313, 1, 0.3131);
    r.record_chunk_handled(0.323, 1, 0.3231);
    r.finish(0.323, 3, Some("length".into()));
    r.server = Some(ServerTimes {
        arrival_s: Some(0.040),
        first_scheduled_s: Some(0.040),
        first_token_s: Some(0.300),
        last_token_s: Some(0.320),
        first_iter: Some(5),
        last_iter: Some(7),
    });
    let ends = std::collections::BTreeMap::from([(5, 0.300), (6, 0.310), (7, 0.320)]);
    let json = Summary::builder(RunInfo::default())
        .percentiles(&[50.0, 99.0])
        .iteration_end_times(ends)
        .build(&[r])
        .unwrap()
        .to_json();
    let c = &json["calibration"];
    assert!(close(num(c, "p50_ttft_error_ms"), 2.0), "{c}");
    assert!(close(num(c, "p99_ttft_error_ms"), 2.0));
    // Gaps 11 and 10 ms against iteration gaps of 10 and 10 ms.
    assert!(close(num(c, "p50_itl_error_ms"), 0.5));
    assert!(close(num(c, "mean_runner_scheduling_delay_ms"), 0.1));
    assert_eq!(c["itl_requests"], 1);
    // The runner overhead in `server` includes the 40 ms before the executor's arrival stamp.
    assert!(close(num(&json["server"], "mean_runner_overhead_ms"), 42.0));
}

// --- open-loop arrivals -------------------------------------------------------------------

/// Mean and coefficient of variation of the gaps between consecutive arrivals.
fn gap_stats(times: &[f64]) -> (f64, f64) {
    let gaps: Vec<f64> = std::iter::once(times[0]).chain(times.windows(2).map(|w| w[1] - w[0])).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    (mean, var.sqrt() / mean)
}

#[test]
fn gamma_arrivals_have_the_asked_rate_and_burstiness() {
    // 20,000 gaps with a fixed seed: the sampling error of the CV is about 1 %.
    let n = 20_000;
    for (burstiness, cv) in [(1.0, 1.0), (4.0, 0.5), (0.25, 2.0)] {
        let times = arrival_schedule(n, 50.0, burstiness, 42).unwrap();
        let (mean, measured_cv) = gap_stats(&times);
        assert!(close(mean, 1.0 / 50.0), "mean gap {mean}");
        assert!((measured_cv - cv).abs() < 0.05 * cv, "burstiness {burstiness}: CV {measured_cv}, expected {cv}");
    }
    let constant = arrival_schedule(100, 4.0, f64::INFINITY, 1).unwrap();
    assert!(constant.iter().enumerate().all(|(i, t)| close(*t, (i + 1) as f64 * 0.25)));
    assert!(arrival_schedule(10, 0.0, 1.0, 1).is_err());
    assert!(arrival_schedule(10, 1.0, -1.0, 1).is_err());
}

// --- invariants ---------------------------------------------------------------------------

proptest! {
    #[test]
    fn percentiles_are_ordered_and_bounded(values in prop::collection::vec(-1e6f64..1e6, 1..200)) {
        let d = Distribution::from_samples(values.clone(), &[]);
        let (min, max) = (d.min().unwrap(), d.max().unwrap());
        let p50 = d.percentile(50.0).unwrap();
        let p99 = d.percentile(99.0).unwrap();
        prop_assert!(min <= p50 && p50 <= p99 && p99 <= max);
        prop_assert_eq!(d.percentile(0.0), Some(min));
        prop_assert_eq!(d.percentile(100.0), Some(max));
        let m = d.mean().unwrap();
        prop_assert!(min - 1e-6 <= m && m <= max + 1e-6);
        prop_assert!(d.std().unwrap() >= 0.0);
        let nr = d.percentile_nearest_rank(90.0).unwrap();
        prop_assert!(values.contains(&nr));
        prop_assert!(d.median().unwrap() == p50 || (d.median().unwrap() - p50).abs() <= 1e-9 * p50.abs().max(1.0));
    }

    #[test]
    fn percentile_is_monotone_in_p(values in prop::collection::vec(0f64..1e4, 1..100), a in 0f64..=100.0, b in 0f64..=100.0) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let d = Distribution::from_samples(values, &[]);
        prop_assert!(d.percentile(lo).unwrap() <= d.percentile(hi).unwrap());
        prop_assert!(d.percentile_nearest_rank(lo).unwrap() <= d.percentile_nearest_rank(hi).unwrap());
    }

    #[test]
    fn per_token_itl_accounts_for_every_token(
        ttft in 0.001f64..1.0,
        chunks in prop::collection::vec((0.0001f64..0.2, 1u32..5), 1..40),
    ) {
        let r = streamed(0, 0.0, ttft, &chunks);
        let per_token = r.itl_per_token_s();
        prop_assert_eq!(per_token.len() as u64, r.output_tokens - 1);
        let span = r.last_token_s().unwrap() - r.first_token_s.unwrap();
        prop_assert!((per_token.iter().sum::<f64>() - span).abs() < 1e-9);
        prop_assert_eq!(r.itl_s().len(), chunks.len() - 1);
        if let Some(tpot) = r.tpot_s() {
            let mean = per_token.iter().sum::<f64>() / per_token.len() as f64;
            prop_assert!((mean - tpot).abs() < 1e-9);
        }
    }

    #[test]
    fn throughput_figures_are_consistent(
        spec in prop::collection::vec((0f64..10.0, 0.001f64..2.0, 1usize..20, any::<bool>()), 1..40),
    ) {
        let records: Vec<RequestRecord> = spec
            .iter()
            .enumerate()
            .map(|(i, &(send, ttft, n, ok))| {
                let mut r = streamed(i as u64, send, ttft, &vec![(0.01, 1); n]);
                if !ok {
                    r.error = Some("x".into());
                }
                r
            })
            .collect();
        let t = Throughput::compute(&records, Some(&Slos::parse("e2el:100000").unwrap()));
        prop_assert_eq!(t.completed + t.failed, records.len() as u64);
        prop_assert!(t.max_concurrent_requests <= t.completed);
        prop_assert!(t.max_output_tokens_per_s <= t.total_output_tokens as f64);
        prop_assert!(t.request_goodput.unwrap() <= t.request_throughput + 1e-12);
        let (start, end) = measured_window(&records).unwrap();
        for r in &records {
            prop_assert!(start <= r.send_s && r.end_s.unwrap() <= end);
        }
        if t.completed > 0 {
            prop_assert!(t.max_concurrent_requests >= 1);
            prop_assert!(t.max_output_tokens_per_s >= 1.0);
        }
    }

    #[test]
    fn csv_fields_round_trip(
        fields in prop::collection::vec(prop_oneof!["[a-z,\" \r\n]{0,12}", "(?s).{0,12}"], 1..8),
    ) {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.fail(0.1, fields.join(""));
        r.finish_reason = fields.first().cloned();
        let rows = parse_csv(&requests_csv(&[r.clone()]));
        prop_assert_eq!(rows.len(), 2);
        prop_assert_eq!(&rows[1][request_column("error")], r.error.as_ref().unwrap());
        prop_assert_eq!(&rows[1][request_column("finish_reason")], r.finish_reason.as_ref().unwrap());
    }
}
