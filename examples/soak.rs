//! Soak test: `trtllm serve` on the built-in simulated engine under N concurrent streaming Generate
//! calls for T minutes; checks every stream and tracks the server's resident memory.
//!
//! Every stream asks for the same prompt with `ignore_eos`, so the simulator's deterministic token
//! generator gives every stream the same `max_tokens` tokens: a stream that differs from the
//! first complete one lost, duplicated or reordered tokens. Each stream must end with exactly one
//! `complete` message, after its chunks, with `finish_reason` "length".
//!
//! Prints streams, tokens, lost/duplicated/reordered counts, the RSS curve (sampled from
//! /proc/PID/status) and the least-squares slope of RSS against completed requests after warm-up
//! (and over the last half of that), in bytes per request. Exits 1 on any loss, error or malformed
//! stream. The server's heap grows for the first ~100k requests at 300 streams before it levels off:
//! judge the slope on runs of several minutes.
//!
//! ```text
//! cargo run --release --example soak -- --streams 200 --minutes 2
//! ```
//!
//! `--addr HOST:PORT` drives a server that is already running instead (one under a heap profiler,
//! or a GPU server); `--pid PID` then names the process whose RSS is sampled.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tonic::transport::Channel;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;

/// Command-line settings (`--name value`).
#[derive(Debug, Clone)]
struct Settings {
    streams: usize,
    minutes: f64,
    max_tokens: u32,
    sample_secs: f64,
    warmup_fraction: f64,
    binary: String,
    /// A running server to drive instead of starting one.
    addr: Option<String>,
    /// The process whose RSS is sampled when driving a running server.
    pid: Option<u32>,
}

impl Settings {
    fn parse() -> Result<Self, String> {
        let default_binary = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("trtllm")))
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| "trtllm".into());
        let mut settings = Settings {
            streams: 16,
            minutes: 0.25,
            max_tokens: 64,
            sample_secs: 2.0,
            warmup_fraction: 0.25,
            binary: default_binary,
            addr: None,
            pid: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--streams" => settings.streams = value.parse().map_err(|e| bad(&e))?,
                "--minutes" => settings.minutes = value.parse().map_err(|e| bad(&e))?,
                "--max-tokens" => settings.max_tokens = value.parse().map_err(|e| bad(&e))?,
                "--sample-secs" => settings.sample_secs = value.parse().map_err(|e| bad(&e))?,
                "--warmup-fraction" => settings.warmup_fraction = value.parse().map_err(|e| bad(&e))?,
                "--binary" => settings.binary = value,
                "--addr" => settings.addr = Some(value),
                "--pid" => settings.pid = Some(value.parse().map_err(|e| bad(&e))?),
                _ => return Err(format!("unknown flag {flag} (see the module docs)")),
            }
        }
        Ok(settings)
    }
}

/// Counters shared by the stream tasks.
#[derive(Debug, Default)]
struct Tally {
    streams: AtomicU64,
    tokens: AtomicU64,
    lost: AtomicU64,
    duplicated: AtomicU64,
    reordered: AtomicU64,
    bad_terminal: AtomicU64,
    errors: AtomicU64,
}

/// Starts `trtllm serve` on a free loopback port; returns it and its address.
fn start_server(binary: &str) -> Result<(Child, String), String> {
    let mut child = Command::new(binary)
        .args(["serve", "--host", "127.0.0.1", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {binary}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
    let addr = line.trim().strip_prefix("listening on ").ok_or_else(|| format!("unexpected first line {line:?}"))?;
    Ok((child, addr.to_string()))
}

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim();
    kb.parse::<u64>().ok().map(|kb| kb * 1024)
}

fn request(id: String, max_tokens: u32) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id: id,
        tokenized: Some(pb::TokenizedInput {
            input_token_ids: vec![11, 12, 13, 14, 15, 16, 17, 18],
            ..Default::default()
        }),
        max_tokens,
        streaming: true,
        ignore_eos: true,
        ..Default::default()
    }
}

/// One stream: its tokens, or why it is malformed.
async fn run_stream(
    client: &mut TrtllmServiceClient<Channel>,
    id: String,
    max_tokens: u32,
    tally: &Tally,
) -> Option<Vec<u32>> {
    let mut stream = match client.generate(request(id, max_tokens)).await {
        Ok(response) => response.into_inner(),
        Err(_) => {
            tally.errors.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    let mut tokens = Vec::new();
    let mut terminals = 0;
    let mut after_terminal = false;
    while let Some(item) = stream.next().await {
        match item.map(|m| m.response) {
            Ok(Some(pb::generate_response::Response::Chunk(chunk))) => {
                after_terminal |= terminals > 0;
                tokens.extend(chunk.token_ids);
            }
            Ok(Some(pb::generate_response::Response::Complete(complete))) => {
                terminals += 1;
                if complete.finish_reason != "length" {
                    tally.bad_terminal.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(None) => {
                tally.bad_terminal.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                tally.errors.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        }
    }
    if terminals != 1 || after_terminal {
        tally.bad_terminal.fetch_add(1, Ordering::Relaxed);
    }
    Some(tokens)
}

/// Compares a stream's tokens with the reference; counts what is missing, extra or out of place.
fn check(tokens: &[u32], reference: &[u32], tally: &Tally) {
    tally.streams.fetch_add(1, Ordering::Relaxed);
    tally.tokens.fetch_add(tokens.len() as u64, Ordering::Relaxed);
    if tokens.len() < reference.len() {
        tally.lost.fetch_add((reference.len() - tokens.len()) as u64, Ordering::Relaxed);
    } else if tokens.len() > reference.len() {
        tally.duplicated.fetch_add((tokens.len() - reference.len()) as u64, Ordering::Relaxed);
    }
    let misplaced = tokens.iter().zip(reference).filter(|(a, b)| a != b).count();
    tally.reordered.fetch_add(misplaced as u64, Ordering::Relaxed);
}

/// Least-squares slope of `y` against `x`.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (mx, my) = points.iter().fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x / n, sy + y / n));
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[tokio::main]
async fn main() {
    let settings = match Settings::parse() {
        Ok(settings) => settings,
        Err(why) => {
            eprintln!("soak: {why}");
            std::process::exit(2);
        }
    };
    let code = match soak(&settings).await {
        Ok(clean) => i32::from(!clean),
        Err(why) => {
            eprintln!("soak: {why}");
            2
        }
    };
    std::process::exit(code);
}

async fn soak(settings: &Settings) -> Result<bool, String> {
    if let Some(addr) = &settings.addr {
        return drive(settings, addr, settings.pid).await;
    }
    let (mut server, addr) = start_server(&settings.binary)?;
    let pid = server.id();
    let result = drive(settings, &addr, Some(pid)).await;
    let _ = server.kill();
    let _ = server.wait();
    result
}

async fn drive(settings: &Settings, addr: &str, pid: Option<u32>) -> Result<bool, String> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let mut client = TrtllmServiceClient::new(channel.clone());
    let reference = run_stream(&mut client, "soak-reference".into(), settings.max_tokens, &Tally::default())
        .await
        .filter(|tokens| tokens.len() == settings.max_tokens as usize)
        .ok_or("the reference stream did not complete with max_tokens tokens")?;
    let reference = Arc::new(reference);
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let duration = Duration::from_secs_f64(settings.minutes * 60.0);
    let deadline = started + duration;
    println!(
        "soak: {} streams x {} tokens for {:.1} min against {addr} (pid {pid:?})",
        settings.streams, settings.max_tokens, settings.minutes
    );

    let mut tasks = Vec::new();
    for worker in 0..settings.streams {
        let (tally, reference, channel) = (tally.clone(), reference.clone(), channel.clone());
        let max_tokens = settings.max_tokens;
        tasks.push(tokio::spawn(async move {
            let mut client = TrtllmServiceClient::new(channel);
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                if let Some(tokens) = run_stream(&mut client, format!("soak-{worker}-{n}"), max_tokens, &tally).await {
                    check(&tokens, &reference, &tally);
                }
            }
        }));
    }

    let mut samples: Vec<(f64, u64, u64)> = Vec::new(); // (seconds, completed streams, RSS bytes)
    while Instant::now() < deadline {
        if let Some(rss) = pid.and_then(rss_bytes) {
            let at = started.elapsed().as_secs_f64();
            let done = tally.streams.load(Ordering::Relaxed);
            println!("  t={at:>7.1}s streams={done:>9} rss={:>8.1} MB", rss as f64 / 1e6);
            samples.push((at, done, rss));
        }
        tokio::time::sleep(Duration::from_secs_f64(settings.sample_secs)).await;
    }
    for task in tasks {
        task.await.map_err(|e| format!("a stream task failed: {e}"))?;
    }
    let alive = pid.and_then(rss_bytes);
    if let Some(rss) = alive {
        samples.push((started.elapsed().as_secs_f64(), tally.streams.load(Ordering::Relaxed), rss));
    }

    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let streams = load(&tally.streams);
    let warm: Vec<(f64, f64)> = samples
        .iter()
        .filter(|(at, _, _)| *at >= duration.as_secs_f64() * settings.warmup_fraction)
        .map(|&(_, done, rss)| (done as f64, rss as f64))
        .collect();
    let per_request = slope(&warm);
    // The process heap grows to a plateau whose height depends on load: a short run's warm-up
    // window may still hold part of that growth, so the last half is reported too.
    let last_half = slope(&warm[warm.len() / 2..]);
    println!("streams      {streams} ({:.0}/s)", streams as f64 / started.elapsed().as_secs_f64());
    println!("tokens       {}", load(&tally.tokens));
    println!("lost         {}", load(&tally.lost));
    println!("duplicated   {}", load(&tally.duplicated));
    println!("reordered    {}", load(&tally.reordered));
    println!("bad terminal {}", load(&tally.bad_terminal));
    println!("errors       {}", load(&tally.errors));
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        println!("rss          {:.1} MB -> {:.1} MB", first.2 as f64 / 1e6, last.2 as f64 / 1e6);
    }
    match per_request {
        Some(slope) => println!("rss slope    {slope:.2} bytes/request after warm-up ({} samples)", warm.len()),
        None => println!("rss slope    n/a (too few samples after warm-up)"),
    }
    if let Some(slope) = last_half {
        println!("rss slope    {slope:.2} bytes/request over the last half of those samples");
    }
    println!("server alive {}", alive.is_some());
    let clean = [&tally.lost, &tally.duplicated, &tally.reordered, &tally.bad_terminal, &tally.errors]
        .iter()
        .all(|c| load(c) == 0)
        && (alive.is_some() || pid.is_none())
        && streams > 0;
    Ok(clean)
}
