//! `trtllm bench --disagg XpYd` (X prefill and Y decode executors in this process) and
//! `--prefill-target ADDR --decode-target ADDR` (`trtllm serve --disagg-role` workers over gRPC):
//! prefill/decode disaggregation measured as a router runs it, with the TTFT split and its
//! prediction in each summary's `disaggregation` section.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use trtllm::bench::{BenchTarget, DisaggBench, DisaggPrediction, DisaggWorker, EngineSimulation, GrpcTarget, Summary};
use trtllm::proto::trtllm as pb;
use trtllm::{AsyncExecutor, CacheTransceiverConfig, ExecutorConfig, KvLink};

use super::target_info::{Setup, TokenizerSource};

/// A prefill and a decode pool's sizes: `XpYd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolShape {
    pub prefill: usize,
    pub decode: usize,
}

impl std::str::FromStr for PoolShape {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{s:?}: expected XpYd with X, Y >= 1 (1p1d, 2p1d, ...)");
        let (x, rest) = s.split_once('p').ok_or_else(bad)?;
        let y = rest.strip_suffix('d').ok_or_else(bad)?;
        let (prefill, decode) = (x.parse::<usize>().map_err(|_| bad())?, y.parse::<usize>().map_err(|_| bad())?);
        if prefill == 0 || decode == 0 || prefill > 64 || decode > 64 {
            return Err(bad());
        }
        Ok(PoolShape { prefill, decode })
    }
}

/// The disaggregation options of `trtllm bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct DisaggArgs {
    /// Prefill/decode disaggregation in process: X prefill and Y decode executors of the engine
    /// (the built-in one or --engine-dir), each request's prefill on the prefill executor with the
    /// fewest requests in flight, its decode on the decode executor likewise. The executors get a
    /// KV-cache transceiver (the --cache-transceiver-* and --kv-link flags set it).
    #[arg(long, value_name = "XpYd", conflicts_with_all = ["prefill_target", "draft_engine_dir", "lora_adapters"])]
    pub disagg: Option<PoolShape>,
    /// A prefill worker (`trtllm serve --disagg-role context`), `HOST:PORT` or `grpc://HOST:PORT`;
    /// repeat it for a pool. Needs --decode-target.
    #[arg(long, value_name = "ADDR", requires = "decode_target")]
    pub prefill_target: Vec<String>,
    /// A decode worker (`trtllm serve --disagg-role generation`); repeat it for a pool.
    #[arg(long, value_name = "ADDR", requires = "prefill_target")]
    pub decode_target: Vec<String>,
}

impl DisaggArgs {
    /// Whether requests run disaggregated over gRPC.
    pub fn over_grpc(&self) -> bool {
        !self.prefill_target.is_empty()
    }
}

/// With `--disagg`, the executor configuration gets a cache transceiver when the flags gave none.
pub fn configure(args: &DisaggArgs, config: &mut ExecutorConfig) {
    if args.disagg.is_some() && config.cache_transceiver.is_none() {
        config.cache_transceiver = Some(CacheTransceiverConfig::new());
    }
}

/// With `--disagg XpYd`, the pools around the loaded executor (the first prefill worker): the
/// target and what the summary's `engine` records about it. `None` without the option.
pub async fn wrap(
    args: &DisaggArgs,
    first: &AsyncExecutor,
    engine_dir: &Path,
) -> anyhow::Result<Option<(BenchTarget, Value)>> {
    let Some(shape) = args.disagg else { return Ok(None) };
    if EngineSimulation::from_engine_dir(engine_dir)?.is_some_and(|s| s.is_virtual()) {
        bail!(
            "--disagg runs several executors, which a virtual clock cannot time together: build {} with --clock real",
            engine_dir.display()
        );
    }
    let config = first.executor().config().clone();
    let load = || AsyncExecutor::load(engine_dir, config.clone());
    let mut prefill = vec![first.clone()];
    for _ in 1..shape.prefill {
        prefill.push(load().await.context("loading a prefill executor")?);
    }
    let mut decode = Vec::with_capacity(shape.decode);
    for _ in 0..shape.decode {
        decode.push(load().await.context("loading a decode executor")?);
    }
    let described = json!({
        "shape": format!("{}p{}d", shape.prefill, shape.decode),
        "where": "in process",
        "cache_transceiver": config.cache_transceiver,
        "kv_link": link_of(&config, engine_dir),
    });
    Ok(Some((BenchTarget::Disaggregated(DisaggBench::in_process(prefill, decode)), described)))
}

/// The link a simulated engine's transfers run over: `--kv-link` (the executor config), else
/// simulation.json's `kv_transfer`; `None` for an engine that is not simulated.
fn link_of(config: &ExecutorConfig, engine_dir: &Path) -> Option<KvLink> {
    if let Some(link) = config.sim_kv_link {
        return Some(link);
    }
    let text = std::fs::read_to_string(engine_dir.join("simulation.json")).ok()?;
    let doc: trtllm::sim::SimulationJson = serde_json::from_str(&text).ok()?;
    Some(doc.kv_transfer.link())
}

fn grpc_url(addr: &str) -> String {
    format!("http://{}", addr.strip_prefix("grpc://").unwrap_or(addr))
}

/// `--prefill-target ... --decode-target ...`: connects to every worker and describes them.
pub async fn grpc(args: &DisaggArgs, scratch: tempfile::TempDir) -> anyhow::Result<Setup> {
    let mut described = Vec::new();
    let mut pools: [Vec<(String, DisaggWorker)>; 2] = [Vec::new(), Vec::new()];
    let mut first: Option<(GrpcTarget, pb::GetModelInfoResponse, pb::GetServerInfoResponse)> = None;
    for (pool, addrs, role) in [(0, &args.prefill_target, "prefill"), (1, &args.decode_target, "decode")] {
        for addr in addrs {
            let target = GrpcTarget::connect(grpc_url(addr))
                .await
                .with_context(|| format!("connecting to {role} worker {addr}"))?;
            let model = target.client().get_model_info(pb::GetModelInfoRequest {}).await?.into_inner();
            let server = target.client().get_server_info(pb::GetServerInfoRequest {}).await?.into_inner();
            let mode = server.disaggregation.as_ref().map(|d| d.mode.clone());
            if let Some((_, m, _)) = &first
                && m.model_id != model.model_id
            {
                bail!(
                    "{role} worker {addr} serves {:?}, the first worker {:?}: one model per pair",
                    model.model_id,
                    m.model_id
                );
            }
            described.push(json!({"pool": role, "addr": addr, "model_id": model.model_id, "mode": mode}));
            pools[pool].push((format!("{role}-{}", pools[pool].len()), DisaggWorker::Grpc(target.clone())));
            if first.is_none() {
                first = Some((target, model, server));
            }
        }
    }
    let Some((grpc, model, server)) = first else { bail!("--prefill-target and --decode-target name no worker") };
    let [prefill, decode] = pools;
    eprintln!(
        "disaggregated over gRPC: {} prefill and {} decode workers, model {}",
        prefill.len(),
        decode.len(),
        model.model_id
    );
    let engine_json = json!({
        "source": "GetModelInfo/GetServerInfo of the first prefill worker",
        "model_id": model.model_id,
        "max_input_len": model.max_input_len,
        "max_seq_len": model.max_seq_len,
        "max_batch_size": model.max_batch_size,
        "vocab_size": model.vocab_size,
        "tp_size": server.tensor_parallel_size,
        "pp_size": server.pipeline_parallel_size,
        "backend": server.backend,
        "backend_version": server.version,
        "gpu": Value::Null,
        "disaggregation": {"shape": format!("{}p{}d", prefill.len(), decode.len()), "where": "gRPC", "workers": described},
    });
    Ok(Setup {
        vocab_size: usize::try_from(model.vocab_size).unwrap_or(0),
        max_seq_len: usize::try_from(model.max_seq_len).unwrap_or(0),
        max_input_len: usize::try_from(model.max_input_len).unwrap_or(0),
        backend: format!("{} {}", server.backend, server.version),
        gpu: None,
        engine_dir: None,
        loaded_dir: None,
        simulation: None,
        tokenizer_source: Some((TokenizerSource::Server(grpc), format!("{} (server)", model.model_id))),
        model_id: model.model_id,
        engine: engine_json,
        target: BenchTarget::Disaggregated(DisaggBench::new(prefill, decode)),
        _scratch: scratch,
    })
}

/// Completes the summary's `disaggregation` section of a disaggregated run: the pools, the token
/// check and, on a simulated engine, the predicted split beside the measured one; returns the
/// console lines.
pub fn complete_section(
    pools: &DisaggBench,
    token_check: Option<Value>,
    setup: &Setup,
    summary: &mut Summary,
    stem: &str,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut section = match summary.disaggregation.take() {
        Some(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    section.insert("pools".into(), pools.pools_section());
    if let Some(check) = token_check {
        if check["matched"] != check["checked"] {
            notes.push(format!(
                "disaggregated {stem}: {} of {} requests rerun aggregated gave different tokens",
                check["checked"].as_u64().unwrap_or(0) - check["matched"].as_u64().unwrap_or(0),
                check["checked"]
            ));
        }
        section.insert("token_check".into(), check);
    }
    let link =
        setup.engine.get("disaggregation").and_then(|d| serde_json::from_value::<KvLink>(d["kv_link"].clone()).ok());
    let buffer = setup.engine["disaggregation"]["cache_transceiver"]["max_tokens_in_buffer"].as_u64();
    if let (Some(sim), Some(link)) = (&setup.simulation, link)
        && let Some(model) = sim.perf_model()
        && summary.throughput.completed > 0
    {
        let prompt = summary.mean_prompt_tokens().round() as usize;
        let prediction = DisaggPrediction::new(
            model,
            prompt,
            sim.description().limits().max_num_tokens,
            sim.description().limits().tokens_per_block,
            link,
            buffer,
        );
        let scale = match sim.clock() {
            trtllm::sim::ClockMode::Real => sim.time_scale(),
            trtllm::sim::ClockMode::Virtual => 1.0,
        };
        let predicted = prediction.section(section.get("ttft_split").unwrap_or(&Value::Null), scale);
        notes.push(prediction.console_line(stem, &predicted));
        summary
            .sections
            .prediction
            .get_or_insert_with(Default::default)
            .model
            .insert("disaggregated".into(), predicted);
    }
    summary.disaggregation = Some(Value::Object(section));
    notes
}
