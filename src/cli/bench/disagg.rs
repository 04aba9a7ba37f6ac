//! `trtllm bench --disagg XpYd` (X prefill and Y decode executors in this process) and
//! `--prefill-target ADDR --decode-target ADDR` (`trtllm serve --disagg-role` workers over gRPC):
//! prefill/decode disaggregation measured as a router runs it, with the TTFT split and its
//! prediction in each summary's `disaggregation` section.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;
use trtllm::bench::{
    BenchTarget, DisaggBench, DisaggPrediction, DisaggSetup, DisaggWorker, DisaggWorkerInfo, EngineSection,
    EngineSimulation, GrpcTarget, Summary, TokenCheck,
};
use trtllm::proto::trtllm as pb;
use trtllm::{AsyncExecutor, CacheTransceiverConfig, ExecutorConfig, KvLink};

use super::target_info::Setup;

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
) -> anyhow::Result<Option<(BenchTarget, DisaggSetup)>> {
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
    let described = DisaggSetup::InProcess {
        shape: format!("{}p{}d", shape.prefill, shape.decode),
        place: "in process".into(),
        cache_transceiver: config.cache_transceiver,
        kv_link: link_of(&config, engine_dir),
    };
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
            described.push(DisaggWorkerInfo {
                pool: role.into(),
                addr: addr.clone(),
                model_id: model.model_id.clone(),
                mode,
            });
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
    // The first worker's model and limits; its shape beyond them is not said here.
    let engine = EngineSection {
        hidden_size: None,
        num_layers: None,
        num_heads: None,
        cp_size: None,
        gpu: None,
        disaggregation: Some(DisaggSetup::Grpc {
            shape: format!("{}p{}d", prefill.len(), decode.len()),
            place: "gRPC".into(),
            workers: described,
        }),
        ..EngineSection::from_server("GetModelInfo/GetServerInfo of the first prefill worker", &model, &server)
    };
    let target = BenchTarget::Disaggregated(DisaggBench::new(prefill, decode));
    Ok(Setup::from_server(target, grpc, model, &server, engine, scratch))
}

/// Completes the summary's `disaggregation` section of a disaggregated run: the pools, the token
/// check and, on a simulated engine, the predicted split beside the measured one; returns the
/// console lines.
pub fn complete_section(
    pools: &DisaggBench,
    token_check: Option<TokenCheck>,
    setup: &Setup,
    summary: &mut Summary,
    stem: &str,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut section = summary.sections.disaggregation.take().unwrap_or_default();
    section.pools = Some(pools.pools_section());
    if let Some(check) = token_check {
        if check.matched != check.checked {
            notes.push(format!(
                "disaggregated {stem}: {} of {} requests rerun aggregated gave different tokens",
                check.checked - check.matched,
                check.checked
            ));
        }
        section.token_check = Some(check);
    }
    let described = setup.engine.disaggregation.as_ref();
    let link = described.and_then(DisaggSetup::kv_link);
    let buffer = described.and_then(DisaggSetup::max_tokens_in_buffer);
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
        // The prediction reads the measured means by their file keys.
        let split = serde_json::to_value(&section.ttft_split).unwrap_or(Value::Null);
        let predicted = prediction.section(&split, scale);
        notes.push(prediction.console_line(stem, &predicted));
        summary
            .sections
            .prediction
            .get_or_insert_with(Default::default)
            .model
            .insert("disaggregated".into(), predicted);
    }
    summary.sections.disaggregation = Some(section);
    notes
}
