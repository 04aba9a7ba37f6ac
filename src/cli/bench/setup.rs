//! Connecting to the target and describing it: the `engine` and metadata of every summary.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use trtllm::bench::{BenchTarget, EngineSection, EngineSimulation, GrpcTarget};
use trtllm::proto::trtllm as pb;
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, ExecutorConfig};

use super::args::RunArgs;
use super::target_info::{Setup, TokenizerSource};

impl Setup {
    pub async fn new(args: &RunArgs) -> anyhow::Result<Setup> {
        let scratch = tempfile::tempdir()?;
        let mut setup = match args.target.as_str() {
            _ if args.disagg.over_grpc() => super::disagg::grpc(&args.disagg, scratch).await?,
            "inprocess" => in_process(args, scratch).await?,
            url if args.disagg.disagg.is_some() => bail!("--disagg runs in process only, not against {url}"),
            url if args.lora_adapters > 0 => bail!("--lora-adapters runs in process only, not against {url}"),
            url if args.draft_target.draft_engine_dir.is_some() => {
                bail!("--draft-engine-dir runs in process only, not against {url}")
            }
            url if url.starts_with("http://") || url.starts_with("https://") => {
                super::http_setup::http(args, url, scratch).await?
            }
            url => grpc(url, scratch).await?,
        };
        if let Some(dir) = &args.tokenizer {
            setup.tokenizer_source = Some((TokenizerSource::Dir(dir.clone()), dir.display().to_string()));
        }
        Ok(setup)
    }

    /// Loads the tokenizer (from a directory, or from the server); `None` when there is none to
    /// load.
    pub async fn tokenizer(&self) -> anyhow::Result<Option<Tokenizer>> {
        let tokenizer = match &self.tokenizer_source {
            None => return Ok(None),
            Some((TokenizerSource::Dir(dir), _)) => {
                Tokenizer::from_dir(dir).with_context(|| format!("loading the tokenizer in {}", dir.display()))?
            }
            Some((TokenizerSource::Server(grpc), _)) => {
                let dir = self._scratch.path().join("server-tokenizer");
                fetch_tokenizer(grpc, &dir).await.context("fetching the server's tokenizer (GetTokenizer)")?;
                Tokenizer::from_dir(&dir)?
            }
        };
        Ok(Some(tokenizer))
    }

    /// The tokenizer's identifier, when there is one.
    pub fn tokenizer_id(&self) -> Option<&str> {
        self.tokenizer_source.as_ref().map(|(_, id)| id.as_str())
    }
}

async fn in_process(args: &RunArgs, scratch: tempfile::TempDir) -> anyhow::Result<Setup> {
    let (engine_dir, builtin) = match &args.engine_dir {
        Some(dir) => (dir.clone(), false),
        None => {
            eprintln!("no --engine-dir: using the {}", trtllm::builtin::BUILTIN_DESCRIPTION);
            (trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), scratch.path())?, true)
        }
    };
    // Frequent stats polls keep the iteration statistics flowing into the collector.
    let base = ExecutorConfig::builder().stats_poll_interval(std::time::Duration::from_millis(20));
    // The same settings `trtllm serve` takes (an explicit --stats-poll-interval-ms wins).
    let mut config = args.executor.apply(base).build()?;
    super::disagg::configure(&args.disagg, &mut config);
    if args.json_schema.is_some() {
        // A structured workload: guided decoding from the tokenizer, which must exist.
        let dir = match &args.tokenizer {
            Some(dir) => dir.clone(),
            None => trtllm::EngineConfig::from_dir(&engine_dir)?
                .tokenizer_dir()
                .map(Path::to_path_buf)
                .context("--json-schema needs a tokenizer: pass --tokenizer DIR")?,
        };
        let tokenizer =
            Tokenizer::from_dir(&dir).with_context(|| format!("loading the tokenizer in {}", dir.display()))?;
        config.guided_decoding = Some(crate::cli::guided::guided_config_for(&tokenizer)?);
    }
    let executor = AsyncExecutor::load(&engine_dir, config.clone()).await?;
    let lora = super::lora::traffic(args, &executor, config.peft_cache.clone(), &engine_dir)?;
    let engine = executor.executor().engine().clone();
    let backend = executor.executor().backend().clone();
    let gpu = simulated_gpu(&engine_dir);
    let simulation = EngineSimulation::from_engine_dir(&engine_dir)?;
    if !args.quiet {
        eprintln!("engine {} ({}), backend {backend}", engine.model_name(), engine_dir.display());
    }
    let tokenizer_source = engine.tokenizer_dir().map(Path::to_path_buf).map(|dir| {
        let id = if builtin { format!("{} (built-in)", engine.model_name()) } else { dir.display().to_string() };
        (TokenizerSource::Dir(dir), id)
    });
    let engine_section = EngineSection::in_process(&engine, &backend, gpu.clone(), executor.executor().config());
    // Disaggregated (`--disagg`): this executor is the first of the prefill pool. Draft-target:
    // the loop over a draft engine and this executor becomes the target.
    let disagg = super::disagg::wrap(&args.disagg, &executor, &engine_dir).await?;
    let disaggregated = disagg.is_some();
    let (target, engine_section) = match (disagg, super::draft_target::wrap(&args.draft_target, &executor).await?) {
        (Some((target, described)), _) => (target, EngineSection { disaggregation: Some(described), ..engine_section }),
        (None, Some((target, draft))) => (target, EngineSection { draft_target: Some(draft), ..engine_section }),
        (None, None) => match lora {
            Some(traffic) => (BenchTarget::InProcessLora(executor, traffic), engine_section),
            None => (BenchTarget::InProcess(executor), engine_section),
        },
    };
    Ok(Setup {
        model_id: engine.model_name().to_string(),
        vocab_size: engine.vocab_size(),
        max_seq_len: engine.max_seq_len(),
        max_input_len: engine.max_input_len(),
        backend: backend.to_string(),
        gpu,
        engine_dir: (!builtin).then(|| engine_dir.clone()),
        // No aggregated virtual-clock twin for a disaggregated run: it would predict another setup.
        loaded_dir: (!disaggregated).then_some(engine_dir),
        simulation,
        tokenizer_source,
        engine: engine_section,
        target,
        _scratch: scratch,
    })
}

async fn grpc(url: &str, scratch: tempfile::TempDir) -> anyhow::Result<Setup> {
    let Some(addr) = url.strip_prefix("grpc://") else {
        bail!("--target must be inprocess, grpc://HOST:PORT or http://HOST:PORT/v1, not {url:?}");
    };
    let grpc = GrpcTarget::connect(format!("http://{addr}")).await.with_context(|| format!("connecting to {url}"))?;
    let model = grpc.client().get_model_info(pb::GetModelInfoRequest {}).await?.into_inner();
    let server = grpc.client().get_server_info(pb::GetServerInfoRequest {}).await?.into_inner();
    eprintln!("target {url}: model {}, {} {}", model.model_id, server.backend, server.version);
    let engine = EngineSection {
        target: Some(url.to_owned()),
        supported_features: Some(model.supported_features.clone()),
        gpu: None,
        ..EngineSection::from_server("GetModelInfo/GetServerInfo", &model, &server)
    };
    Ok(Setup::from_server(BenchTarget::Grpc(grpc.clone()), grpc, model, &server, engine, scratch))
}

/// simulation.json's `gpu` (the simulated GPU preset), when the engine directory has one.
fn simulated_gpu(engine_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(engine_dir.join("simulation.json")).ok()?;
    let doc: trtllm::sim::SimulationJson = serde_json::from_str(&text).ok()?;
    Some(doc.gpu)
}

/// Fetches the server's tokenizer zip, checks its sha256, and unpacks it into `dir`.
async fn fetch_tokenizer(grpc: &GrpcTarget, dir: &Path) -> anyhow::Result<()> {
    let mut stream =
        grpc.client().get_tokenizer(trtllm::proto::smg::grpc::common::GetTokenizerRequest {}).await?.into_inner();
    let (mut bytes, mut digest) = (Vec::new(), String::new());
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        bytes.extend_from_slice(&chunk.data);
        if !chunk.sha256.is_empty() {
            digest = chunk.sha256;
        }
    }
    let actual: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    if actual != digest {
        bail!("the tokenizer archive's sha256 is {actual}, the server said {digest:?}");
    }
    std::fs::create_dir_all(dir)?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    for i in 0..archive.len() {
        let mut file = archive.by_index(i)?;
        // Flat archive: keep only the file name, never a path from the archive.
        let Some(name) = Path::new(file.name()).file_name().map(|n| n.to_owned()) else { continue };
        let mut content = Vec::new();
        file.read_to_end(&mut content)?;
        std::fs::write(dir.join(name), content)?;
    }
    Ok(())
}
