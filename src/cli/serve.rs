//! `trtllm serve`: the gRPC server, until SIGINT or SIGTERM.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use trtllm::server::{ServeOptions, serve};
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, ExecutorConfig, SchedulerPolicy};

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
    /// Require `authorization: Bearer <token>` on every call.
    #[arg(long, env = "TRTLLM_AUTH_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// Requests in flight at once before RESOURCE_EXHAUSTED.
    #[arg(long)]
    max_concurrent_requests: Option<usize>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics on this port (loopback unless --host says otherwise).
    #[arg(long)]
    metrics_port: Option<u16>,
    /// Largest gRPC message, bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    max_message_size: usize,
    /// Seconds in-flight requests may finish after SIGTERM/SIGINT before they are cancelled.
    #[arg(long, default_value_t = 30.0)]
    grace_period_secs: f64,
    /// Executor: runtime cap on requests per batch.
    #[arg(long)]
    max_batch_size: Option<u32>,
    /// Executor: runtime cap on tokens per iteration.
    #[arg(long)]
    max_num_tokens: Option<u32>,
    /// Executor: capacity scheduler policy.
    #[arg(long, value_enum)]
    scheduler_policy: Option<SchedulerPolicy>,
    /// Executor: fraction of free GPU memory for the KV cache.
    #[arg(long)]
    kv_cache_free_gpu_memory_fraction: Option<f32>,
    /// Executor: disable KV block reuse.
    #[arg(long)]
    no_block_reuse: bool,
    /// Executor: requests that may wait in the queue (more get RESOURCE_EXHAUSTED).
    #[arg(long)]
    max_queue_size: Option<u32>,
    /// Executor: CUDA graphs for generation steps.
    #[arg(long)]
    cuda_graphs: bool,
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
    let mut config =
        ExecutorConfig::builder().kv_cache_enable_block_reuse(!args.no_block_reuse).cuda_graph_mode(args.cuda_graphs);
    if let Some(v) = args.max_batch_size {
        config = config.max_batch_size(v);
    }
    if let Some(v) = args.max_num_tokens {
        config = config.max_num_tokens(v);
    }
    if let Some(v) = args.scheduler_policy {
        config = config.scheduler_policy(v);
    }
    if let Some(v) = args.kv_cache_free_gpu_memory_fraction {
        config = config.kv_cache_free_gpu_memory_fraction(v);
    }
    if let Some(v) = args.max_queue_size {
        config = config.max_queue_size(v);
    }
    let executor = AsyncExecutor::load(&engine_dir, config.build()?).await?;
    let tokenizer_dir = args.tokenizer.clone().or(executor.executor().engine().tokenizer_dir.clone());
    let tokenizer = match &tokenizer_dir {
        Some(dir) => {
            Some(Tokenizer::from_dir(dir).with_context(|| format!("loading the tokenizer in {}", dir.display()))?)
        }
        None => {
            tracing::warn!("no tokenizer: stop strings and GetTokenizer are unavailable (pass --tokenizer)");
            None
        }
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.host, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let engine = executor.executor().engine();
    tracing::info!(%addr, model = %engine.model_name, backend = %executor.executor().backend(), "serving trtllm.TrtllmService");
    println!("listening on {addr}");
    let options = ServeOptions {
        addr,
        auth_token: args.auth_token.clone(),
        max_concurrent_requests: args.max_concurrent_requests,
        max_message_size: args.max_message_size,
        grace_period: Duration::from_secs_f64(args.grace_period_secs.max(0.0)),
        metrics_addr: args.metrics_port.map(|port| SocketAddr::new(args.host, port)),
    };
    serve(executor, tokenizer, options, listener, shutdown_signal()).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    tracing::info!("server stopped");
    Ok(ExitCode::SUCCESS)
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
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
