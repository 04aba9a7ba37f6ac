//! The servers' own view beside the client's: Prometheus endpoints (`trtllm serve
//! --metrics-port`, the smg gateway's `--prometheus-port`, any `--metrics-url`) scraped before,
//! during and after a point; counters as deltas, gauges as series.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// A scrape that failed: the endpoint could not be reached or read.
#[derive(Debug, thiserror::Error)]
pub enum ServerMetricsError {
    /// The request failed or the endpoint answered with an error status.
    #[error("scraping {url}: {message}")]
    Scrape {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
}

/// Whether a series counts up (its delta over the point means something) or goes up and down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// A counter (and a histogram's or summary's `_sum` and `_count`).
    Counter,
    /// A gauge (and an untyped value).
    Gauge,
}

/// One scrape: each series (`name{label="value",...}`) with its kind and value.
pub type Scraped = BTreeMap<String, (SeriesKind, f64)>;

/// Parses the Prometheus text exposition format with the prometheus-parse crate.
///
/// ```rust
/// use trtllm::bench::{SeriesKind, parse_prometheus};
///
/// let text = "# TYPE reqs counter\nreqs{model=\"m\"} 7\n# TYPE queue gauge\nqueue 3\n";
/// let s = parse_prometheus(text).unwrap();
/// assert_eq!(s["reqs{model=\"m\"}"], (SeriesKind::Counter, 7.0));
/// assert_eq!(s["queue"], (SeriesKind::Gauge, 3.0));
/// ```
pub fn parse_prometheus(text: &str) -> std::io::Result<Scraped> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))?;
    let mut out = Scraped::new();
    for sample in scrape.samples {
        let key = match sample.labels.is_empty() {
            true => sample.metric.clone(),
            false => format!("{}{{{}}}", sample.metric, sample.labels),
        };
        let named_count = ["_total", "_count", "_sum"].iter().any(|s| sample.metric.ends_with(s));
        let (kind, value) = match sample.value {
            prometheus_parse::Value::Counter(v) => (SeriesKind::Counter, v),
            prometheus_parse::Value::Gauge(v) => (SeriesKind::Gauge, v),
            prometheus_parse::Value::Untyped(v) if named_count => (SeriesKind::Counter, v),
            prometheus_parse::Value::Untyped(v) => (SeriesKind::Gauge, v),
            // Buckets and quantiles: their `_sum` and `_count` carry the totals.
            prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => continue,
        };
        out.insert(key, (kind, value));
    }
    Ok(out)
}

/// Fetches and parses one endpoint.
pub async fn scrape(client: &reqwest::Client, url: &str) -> Result<Scraped, ServerMetricsError> {
    let fail = |message: String| ServerMetricsError::Scrape { url: url.to_owned(), message };
    let response = client.get(url).send().await.map_err(|e| fail(e.to_string()))?;
    let response = response.error_for_status().map_err(|e| fail(e.to_string()))?;
    let text = response.text().await.map_err(|e| fail(e.to_string()))?;
    parse_prometheus(&text).map_err(|e| fail(e.to_string()))
}

/// What one endpoint showed over a point.
#[derive(Debug, Clone, Default)]
pub struct EndpointLog {
    /// The endpoint.
    pub url: String,
    /// Before the point.
    pub before: Option<Scraped>,
    /// During it: seconds since the point started, and the scrape.
    pub during: Vec<(f64, Scraped)>,
    /// After it.
    pub after: Option<Scraped>,
    /// Scrapes that failed.
    pub errors: Vec<String>,
}

/// Scrapes endpoints before (at [`ServerMetricsWatch::start`]), every `interval` during, and
/// after (at [`ServerMetricsWatch::finish`]) a point.
#[derive(Debug)]
pub struct ServerMetricsWatch {
    stop: Arc<Notify>,
    task: JoinHandle<Vec<EndpointLog>>,
    client: reqwest::Client,
}

impl ServerMetricsWatch {
    /// Scrapes each of `urls` once, then keeps scraping every `interval` on a task.
    pub async fn start(urls: &[String], interval: Duration) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap_or_default();
        let mut logs: Vec<EndpointLog> = Vec::new();
        for url in urls {
            let mut log = EndpointLog { url: url.clone(), ..Default::default() };
            match scrape(&client, url).await {
                Ok(s) => log.before = Some(s),
                Err(e) => log.errors.push(e.to_string()),
            }
            logs.push(log);
        }
        let stop = Arc::new(Notify::new());
        let (flag, c) = (stop.clone(), client.clone());
        let task = tokio::spawn(async move {
            let start = Instant::now();
            loop {
                tokio::select! {
                    _ = flag.notified() => return logs,
                    _ = tokio::time::sleep(interval) => {}
                }
                for log in &mut logs {
                    match scrape(&c, &log.url).await {
                        Ok(s) => log.during.push((start.elapsed().as_secs_f64(), s)),
                        Err(e) => log.errors.push(e.to_string()),
                    }
                }
            }
        });
        ServerMetricsWatch { stop, task, client }
    }

    /// Stops the periodic scrapes and scrapes each endpoint once more.
    pub async fn finish(self) -> Vec<EndpointLog> {
        self.stop.notify_one();
        let mut logs = self.task.await.unwrap_or_default();
        for log in &mut logs {
            match scrape(&self.client, &log.url).await {
                Ok(s) => log.after = Some(s),
                Err(e) => log.errors.push(e.to_string()),
            }
        }
        logs
    }
}

/// The summary's `server_metrics`: per `--metrics-url` endpoint, each counter that moved
/// (before, after, delta), how many did not, and each gauge's mean, max and last value over the
/// scrapes during and after the point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetricsSection {
    /// One entry per endpoint, in the order given.
    pub endpoints: Vec<EndpointFigures>,
}

/// One endpoint's figures over a point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointFigures {
    /// The endpoint.
    pub url: String,
    /// Scrapes that answered (before, during and after).
    pub scrapes: usize,
    /// Each counter that moved, by series (name and labels).
    pub counters: BTreeMap<String, CounterChange>,
    /// Counters that did not move.
    pub unchanged_counters: usize,
    /// Each gauge, by series.
    pub gauges: BTreeMap<String, GaugeFigures>,
    /// Scrapes that failed, and why.
    pub errors: Vec<String>,
}

/// A counter before and after a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterChange {
    /// Before the point (0 when the series was not there yet).
    pub before: f64,
    /// After it.
    pub after: f64,
    /// after − before.
    pub delta: f64,
}

/// A gauge over the scrapes during and after a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeFigures {
    /// Mean value.
    pub mean: f64,
    /// Highest value.
    pub max: f64,
    /// The last value.
    pub last: Option<f64>,
    /// Values seen.
    pub samples: usize,
}

/// The summary's `server_metrics` from each endpoint's scrapes.
pub fn server_metrics_section(logs: &[EndpointLog]) -> ServerMetricsSection {
    let endpoints = logs
        .iter()
        .map(|log| {
            let empty = Scraped::new();
            let (before, after) = (log.before.as_ref().unwrap_or(&empty), log.after.as_ref().unwrap_or(&empty));
            let mut counters = BTreeMap::new();
            let mut unchanged = 0;
            for (key, (kind, end)) in after {
                if *kind != SeriesKind::Counter {
                    continue;
                }
                let start = before.get(key).map_or(0.0, |v| v.1);
                match end - start {
                    d if d != 0.0 => {
                        counters.insert(key.clone(), CounterChange { before: start, after: *end, delta: d });
                    }
                    _ => unchanged += 1,
                }
            }
            let mut series: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for scraped in log.during.iter().map(|(_, s)| s).chain(log.after.iter()) {
                for (key, (kind, v)) in scraped {
                    if *kind == SeriesKind::Gauge {
                        series.entry(key).or_default().push(*v);
                    }
                }
            }
            let gauges = series
                .into_iter()
                .map(|(key, values)| {
                    let figures = GaugeFigures {
                        mean: values.iter().sum::<f64>() / values.len() as f64,
                        max: values.iter().copied().fold(f64::MIN, f64::max),
                        last: values.last().copied(),
                        samples: values.len(),
                    };
                    (key.to_owned(), figures)
                })
                .collect();
            EndpointFigures {
                url: log.url.clone(),
                scrapes: usize::from(log.before.is_some()) + log.during.len() + usize::from(log.after.is_some()),
                counters,
                unchanged_counters: unchanged,
                gauges,
                errors: log.errors.clone(),
            }
        })
        .collect();
    ServerMetricsSection { endpoints }
}

/// One row per endpoint and scrape during the point: `{url, t_s, gauges: {series: value}}`,
/// for `<stem>.server_metrics.jsonl`.
pub fn server_metrics_rows(logs: &[EndpointLog]) -> Vec<Value> {
    logs.iter()
        .flat_map(|log| {
            log.during.iter().map(move |(t_s, scraped)| {
                let gauges: BTreeMap<&str, f64> = scraped
                    .iter()
                    .filter(|(_, (k, _))| *k == SeriesKind::Gauge)
                    .map(|(key, (_, v))| (key.as_str(), *v))
                    .collect();
                json!({ "url": log.url, "t_s": t_s, "gauges": gauges })
            })
        })
        .collect()
}
