//! The Prometheus endpoint: request outcomes (including client disconnects and deadlines) and the
//! executor's statistics under exactly the families and labels of Triton's TensorRT-LLM backend.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::server::{TestServer, collect, free_port_addr, http_get, request};
use common::sim::eventually_async;
use futures::StreamExt;
use trtllm::proto::trtllm as pb;
use trtllm::server::ServeOptions;

/// One sample line: metric name, labels in order, value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

fn parse(body: &str) -> Vec<Sample> {
    body.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (head, value) = line.rsplit_once(' ').expect("name and value");
            let (name, labels) = match head.split_once('{') {
                Some((name, rest)) => {
                    let inner = rest.strip_suffix('}').expect("closing brace");
                    let labels = inner
                        .split("\",")
                        .map(|pair| {
                            let (k, v) = pair.split_once("=\"").expect("key=\"value\"");
                            (k.to_string(), v.trim_end_matches('"').to_string())
                        })
                        .collect();
                    (name.to_string(), labels)
                }
                None => (head.to_string(), Vec::new()),
            };
            Sample { name, labels, value: value.parse().unwrap_or(f64::NAN) }
        })
        .collect()
}

fn value(samples: &[Sample], name: &str, label: (&str, &str)) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && s.labels.iter().any(|(k, v)| k == label.0 && v == label.1))
        .map(|s| s.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_every_outcome_and_mirror_tritons_families() {
    let metrics_addr = free_port_addr();
    let options = ServeOptions { metrics_addr: Some(metrics_addr), ..Default::default() };
    let server = TestServer::start(2.0, options).await;
    let mut client = server.client().await;

    // length
    collect(&mut client, request("m-length", vec![1, 2, 3], 5, true)).await.unwrap();
    // invalid_argument
    collect(&mut client, request("m-invalid", vec![], 5, true)).await.unwrap_err();
    // abort (Abort RPC): ends with a complete
    let mut aborted = client.generate(request("m-abort", vec![4], 2000, true)).await.unwrap().into_inner();
    assert!(aborted.next().await.is_some());
    assert!(client.abort(pb::AbortRequest { request_id: "m-abort".into() }).await.unwrap().into_inner().success);
    while aborted.next().await.is_some() {}
    // cancelled: the client goes away
    let mut gone = client.generate(request("m-gone", vec![5], 2000, true)).await.unwrap().into_inner();
    assert!(gone.next().await.is_some());
    drop(gone);
    // deadline_exceeded
    let mut timed = tonic::Request::new(request("m-deadline", vec![6], 2000, true));
    timed.set_timeout(Duration::from_millis(80));
    let mut timed = client.generate(timed).await.unwrap().into_inner();
    while timed.next().await.is_some() {}

    let expected =
        [("length", 1.0), ("invalid_argument", 1.0), ("abort", 1.0), ("cancelled", 1.0), ("deadline_exceeded", 1.0)];
    let settled = &|samples: &[Sample]| {
        expected.iter().all(|(o, n)| value(samples, "trtllm_requests_total", ("outcome", o)) == Some(*n))
            && value(samples, "nv_trt_llm_general_metrics", ("general_type", "iteration_counter"))
                .is_some_and(|v| v > 0.0)
    };
    eventually_async(
        Duration::from_secs(5),
        || async move { settled(&parse(&http_get(metrics_addr, "/metrics").await)) },
    )
    .await;
    // Settled or not, the checks below say what is missing.
    let samples = parse(&http_get(metrics_addr, "/metrics").await);
    for (outcome, count) in expected {
        assert_eq!(
            value(&samples, "trtllm_requests_total", ("outcome", outcome)),
            Some(count),
            "outcome {outcome}: {samples:#?}"
        );
    }
    assert_eq!(
        value(&samples, "trtllm_tokens_total", ("direction", "input")),
        Some(4.0),
        "prompts of finished requests"
    );

    // Triton's families: the same names, label keys in the same order, the same category values.
    let triton: [(&str, &str, &[&str]); 5] = [
        ("nv_trt_llm_request_metrics", "request_type", &["active", "max", "scheduled", "context", "waiting"]),
        ("nv_trt_llm_runtime_memory_metrics", "memory_type", &["cpu", "gpu", "pinned"]),
        (
            "nv_trt_llm_kv_cache_block_metrics",
            "kv_cache_block_type",
            &["max", "free", "used", "tokens_per", "reused", "fraction"],
        ),
        (
            "nv_trt_llm_inflight_batcher_metrics",
            "inflight_batcher_specific_metric",
            &["total_context_tokens", "generation_requests", "micro_batch_id", "paused_requests"],
        ),
        ("nv_trt_llm_general_metrics", "general_type", &["timestamp", "iteration_counter"]),
    ];
    for (family, category, values) in triton {
        let rows: Vec<&Sample> = samples.iter().filter(|s| s.name == family).collect();
        let mut seen = BTreeSet::new();
        for row in &rows {
            let keys: Vec<&str> = row.labels.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, ["model", "version", category], "{family} labels");
            assert_eq!(row.labels[0].1, "trtllm-builtin-sim");
            assert_eq!(row.labels[1].1, "1", "Triton's model version");
            seen.insert(row.labels[2].1.as_str());
        }
        assert_eq!(seen, values.iter().copied().collect::<BTreeSet<_>>(), "{family} categories");
    }
    assert_eq!(value(&samples, "nv_trt_llm_kv_cache_block_metrics", ("kv_cache_block_type", "tokens_per")), Some(32.0));
    let stamp = value(&samples, "nv_trt_llm_general_metrics", ("general_type", "timestamp")).unwrap();
    let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as f64;
    assert!((now_us - stamp).abs() < 3.6e9 * 24.0, "timestamp in microseconds since the epoch: {stamp}");

    // Triton's token-length histograms, buckets 10/50/100/500/1000, over the finished requests.
    for (family, category, sum) in [
        ("nv_llm_input_token_len", "total_input_tokens", 4.0),
        ("nv_llm_output_token_len", "total_output_tokens", f64::NAN),
    ] {
        let buckets: BTreeMap<String, f64> = samples
            .iter()
            .filter(|s| s.name == format!("{family}_bucket"))
            .map(|s| {
                // Label order carries no meaning in Prometheus; the set does.
                let labels: BTreeMap<&str, &str> = s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let keys: BTreeSet<&str> = labels.keys().copied().collect();
                assert_eq!(keys, BTreeSet::from(["model", "version", "response_metric_type", "le"]), "{family}");
                assert_eq!((labels["version"], labels["response_metric_type"]), ("1", category));
                (labels["le"].to_string(), s.value)
            })
            .collect();
        let les: BTreeSet<&str> = buckets.keys().map(String::as_str).collect();
        assert_eq!(les, BTreeSet::from(["10.0", "50.0", "100.0", "500.0", "1000.0", "+Inf"]), "{family}");
        assert_eq!(value(&samples, &format!("{family}_count"), ("response_metric_type", category)), Some(2.0));
        if !sum.is_nan() {
            assert_eq!(value(&samples, &format!("{family}_sum"), ("response_metric_type", category)), Some(sum));
        }
    }
}
