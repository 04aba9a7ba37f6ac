//! `trtllm serve`: the gRPC server, until SIGINT or SIGTERM.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use trtllm::AsyncExecutor;
use trtllm::server::{DisaggRole, ServeOptions, TlsConfig, serve};
use trtllm::text::Tokenizer;

use super::executor_args::ExecutorArgs;

/// KV-cache events the executor buffers when serving and `--kv-cache-event-buffer-size` is not
/// given: SubscribeKvEvents works out of the box. The server reads the buffer continuously, so it
/// only needs to hold what one burst of evictions produces.
const DEFAULT_KV_EVENT_BUFFER: u64 = 4096;

/// Arguments of `trtllm serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The engine directory; without it the built-in simulated engine is served.
    #[arg(long, env = "TRTLLM_ENGINE_DIR")]
    engine_dir: Option<PathBuf>,
    /// The tokenizer directory (default: the one the engine directory names). Enables stop strings
    /// and GetTokenizer.
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// Address to bind (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to bind (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 50051)]
    port: u16,
    /// Require `authorization: Bearer <token>` on every call (trtllm.TrtllmService, health,
    /// reflection).
    #[arg(long, env = "TRTLLM_AUTH_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// Let grpc.health.v1.Health through without the token, for probes that cannot send headers.
    #[arg(long, requires = "auth_token")]
    health_without_auth: bool,
    /// Serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (mutual TLS; needs --tls-cert).
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// Requests in flight at once before RESOURCE_EXHAUSTED.
    #[arg(long)]
    max_concurrent_requests: Option<usize>,
    /// Deadline, in seconds, of requests whose client sets none or a later one (DEADLINE_EXCEEDED).
    #[arg(long)]
    request_timeout_secs: Option<f64>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics on this port (loopback unless --host says otherwise).
    #[arg(long)]
    metrics_port: Option<u16>,
    /// Largest gRPC message, bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    max_message_size: usize,
    /// Seconds in-flight requests may finish after SIGTERM/SIGINT before they are cancelled.
    #[arg(long, default_value_t = 30.0)]
    grace_period_secs: f64,
    /// Seconds after the grace period for cancelled streams and connections to close before the
    /// server exits regardless.
    #[arg(long, default_value_t = 5.0)]
    shutdown_timeout_secs: f64,
    /// Milliseconds between EngineLoad heartbeats on SubscribeKvEvents streams.
    #[arg(long, default_value_t = 1000)]
    kv_heartbeat_ms: u64,
    /// Do not enable guided decoding (structured output), which is on whenever a tokenizer is available.
    #[arg(long)]
    no_guided_decoding: bool,
    /// Which legs of disaggregated requests this worker runs: `context` (a prefill worker:
    /// context-only requests), `generation` (a decode worker: generation-only requests) or `both`
    /// (every request). A context or generation worker has a KV-cache transceiver with default
    /// settings unless the transceiver flags say otherwise. See docs/disaggregated.md.
    #[arg(long, default_value = "both")]
    disagg_role: DisaggRole,
    #[command(flatten)]
    executor: ExecutorArgs,
}

/// Seconds from the command line as a duration; negative, NaN or huge values are refused.
fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| anyhow::anyhow!("--{flag} {value}: expected a number of seconds >= 0"))
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir()?;
    let engine_dir = match &args.engine_dir {
        Some(dir) => dir.clone(),
        None => {
            tracing::info!("no --engine-dir: serving the {}", trtllm::builtin::BUILTIN_DESCRIPTION);
            trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), scratch.path())?
        }
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsConfig::from_files(cert, key, args.tls_client_ca.as_ref())?),
        _ => None,
    };
    let grace_period = seconds("grace-period-secs", args.grace_period_secs)?;
    let shutdown_timeout = seconds("shutdown-timeout-secs", args.shutdown_timeout_secs)?;
    let default_deadline = args.request_timeout_secs.map(|s| seconds("request-timeout-secs", s)).transpose()?;
    if default_deadline.is_some_and(|d| d.is_zero()) || args.kv_heartbeat_ms == 0 {
        anyhow::bail!("--request-timeout-secs and --kv-heartbeat-ms must be positive");
    }
    let mut config = args.executor.config()?;
    if args.executor.kv_cache_event_buffer_size().is_none() {
        config.kv_cache_event_buffer_max_size = DEFAULT_KV_EVENT_BUFFER;
    }
    // A worker of one disaggregated role cannot run without the transceiver that moves its KV cache.
    if args.disagg_role != DisaggRole::Both && config.cache_transceiver.is_none() {
        config.cache_transceiver = Some(trtllm::CacheTransceiverConfig::new());
    }
    let tokenizer_dir = match args.tokenizer.clone() {
        Some(dir) => Some(dir),
        None => trtllm::EngineConfig::from_dir(&engine_dir)?.tokenizer_dir().map(std::path::Path::to_path_buf),
    };
    let tokenizer = match &tokenizer_dir {
        Some(dir) => {
            Some(Tokenizer::from_dir(dir).with_context(|| format!("loading the tokenizer in {}", dir.display()))?)
        }
        None => {
            tracing::warn!(
                "no tokenizer: stop strings, guided decoding and GetTokenizer are unavailable (pass --tokenizer)"
            );
            None
        }
    };
    if let Some(tokenizer) = &tokenizer {
        config.guided_decoding = super::guided::serve_guided_decoding(tokenizer, args.no_guided_decoding);
    }
    let executor = AsyncExecutor::load(&engine_dir, config).await?;
    if !executor.executor().can_enqueue() {
        // Leader mode under `mpirun`: every rank loads the engine, only the leader (rank 0) serves.
        // This rank computes for the leader until the leader's executor shuts down, and must not
        // bind the port.
        tracing::info!("a leader-mode worker rank: computing for the leader, not serving");
        executor.shutdown(trtllm::ShutdownMode::Cancel).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.host, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let engine = executor.executor().engine();
    tracing::info!(
        %addr,
        model = %engine.model_name(),
        backend = %executor.executor().backend(),
        tls = tls.is_some(),
        auth = args.auth_token.is_some(),
        "serving trtllm.TrtllmService"
    );
    println!("listening on {addr}");
    let options = ServeOptions {
        addr,
        auth_token: args.auth_token.clone(),
        health_without_auth: args.health_without_auth,
        tls,
        max_concurrent_requests: args.max_concurrent_requests,
        max_message_size: args.max_message_size,
        grace_period,
        shutdown_timeout,
        default_deadline,
        kv_heartbeat: Duration::from_millis(args.kv_heartbeat_ms),
        metrics_addr: args.metrics_port.map(|port| SocketAddr::new(args.host, port)),
        disagg_role: args.disagg_role,
        ..ServeOptions::default()
    };
    serve(executor, tokenizer, options, listener, shutdown_signal()).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    tracing::info!("server stopped");
    Ok(ExitCode::SUCCESS)
}

/// Resolves on SIGINT or SIGTERM; a second one during the drain ends the process at once.
async fn shutdown_signal() {
    interrupt_or_terminate().await;
    tokio::spawn(async {
        interrupt_or_terminate().await;
        tracing::warn!("second shutdown signal during the drain: exiting now");
        std::process::exit(130);
    });
}

/// Resolves on the next SIGINT or SIGTERM.
async fn interrupt_or_terminate() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}
