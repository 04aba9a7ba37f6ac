//! `trtllm sim`: create simulated engine directories from model and GPU presets, and list the presets.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use trtllm::engine::description::moe_split;
use trtllm::sim::{
    ClockMode, GpuPreset, KvCacheDtype, ModelPreset, OVERRIDABLE_FIGURES, SimulatedEngine, SimulatedSpeculation,
    WeightDtype,
};
use trtllm::speculative::SpeculativeDecodingMode;

/// Arguments of `trtllm sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Write a simulated engine directory (config.json + simulation.json) for a model on a GPU.
    Build(Box<BuildArgs>),
    /// The timing model's time and its parts for one batch on an engine.
    Predict(Box<super::sim_model::PredictArgs>),
    /// Fit a GPU's figures to `trtllm bench` iteration logs or a kernel table; writes a calibration file.
    Calibrate(Box<super::sim_model::CalibrateArgs>),
    /// List the model and GPU presets with their figures.
    Presets {
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// Limits default to trtllm-build's defaults; max_seq_len to the model's context length.
#[derive(Debug, clap::Args)]
struct BuildArgs {
    /// Model: a preset id (see `trtllm sim presets`), a config.json (Hugging Face or TensorRT-LLM form)
    /// or a directory holding one.
    #[arg(long)]
    model: String,
    /// GPU preset (see `trtllm sim presets`).
    #[arg(long, required_unless_present = "gpu_spec")]
    gpu: Option<String>,
    /// A JSON file describing a GPU without a preset (the members of a preset: `trtllm sim presets --json`).
    #[arg(long, value_name = "FILE", conflicts_with = "gpu")]
    gpu_spec: Option<PathBuf>,
    /// Tensor-parallel GPUs.
    #[arg(long, default_value_t = 1)]
    tp: usize,
    /// Mixture-of-Experts models: expert-parallel ranks among the tensor-parallel GPUs (each holds
    /// experts / N whole experts; the rest of tp splits each expert). Must divide --tp and the expert count.
    #[arg(long, default_value_t = 1)]
    moe_ep: usize,
    /// Mixture-of-Experts models: tensor parallelism inside each expert (default --tp / --moe-ep).
    #[arg(long)]
    moe_tp: Option<usize>,
    /// Mixture-of-Experts routing imbalance: routed rows of the busiest expert-parallel rank over the mean
    /// (simulation.json `moe_imbalance`; default 1, uniform routing).
    #[arg(long)]
    moe_imbalance: Option<f64>,
    /// Weight precision.
    #[arg(long, value_enum, default_value_t = WeightDtype::Bf16)]
    dtype: WeightDtype,
    /// KV-cache precision.
    #[arg(long, value_enum, default_value_t = KvCacheDtype::Auto)]
    kv_cache_dtype: KvCacheDtype,
    /// build_config.max_batch_size.
    #[arg(long, default_value_t = 2048)]
    max_batch_size: usize,
    /// build_config.max_input_len.
    #[arg(long, default_value_t = 1024)]
    max_input_len: usize,
    /// build_config.max_seq_len (default: the model's max_position_embeddings).
    #[arg(long)]
    max_seq_len: Option<usize>,
    /// build_config.max_num_tokens.
    #[arg(long, default_value_t = 8192)]
    max_num_tokens: usize,
    /// build_config.max_beam_width.
    #[arg(long, default_value_t = 1)]
    max_beam_width: usize,
    /// plugin_config.tokens_per_block.
    #[arg(long, default_value_t = 32)]
    tokens_per_block: usize,
    /// `real`: iterations take their simulated time on the wall clock; `virtual`: no sleeping, a simulated
    /// clock stamps every executor timestamp (for planning).
    #[arg(long, value_enum, default_value_t = ClockMode::Real)]
    clock: ClockMode,
    /// Real clock: wall-clock time per simulated millisecond.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Replace one GPU figure, e.g. `mfu=0.5` (repeatable).
    #[arg(long = "gpu-override", value_name = "FIGURE=VALUE", value_parser = parse_override)]
    gpu_overrides: Vec<(String, f64)>,
    /// Apply a calibration file's fitted figures (from `trtllm sim calibrate`) as GPU overrides.
    #[arg(long)]
    calibration: Option<PathBuf>,
    /// Fix the KV-cache capacity in tokens instead of deriving it from GPU memory.
    #[arg(long)]
    kv_cache_max_tokens: Option<usize>,
    /// Time kernel launches as CUDA graph replays (simulation.json `cuda_graphs`).
    #[arg(long)]
    cuda_graphs: bool,
    /// The link this engine's KV transfers cross when it serves one leg of a disaggregated request
    /// (simulation.json `kv_transfer`; `serve` and `bench` can replace it with their own --kv-link).
    #[arg(long, value_enum)]
    kv_link: Option<trtllm::KvLinkPreset>,
    /// The fraction of the link's bandwidth a transfer achieves, in (0, 1] (default 0.8, an assumption).
    #[arg(long)]
    kv_link_efficiency: Option<f64>,
    /// Where to write the engine directory (created if missing).
    #[arg(long)]
    output: PathBuf,
    /// Build with LoRA support on the attention and MLP projections, adapters up to this rank
    /// (`lora_plugin auto`, `lora_config.max_lora_rank`).
    #[arg(long)]
    lora_max_rank: Option<u32>,
    /// Build a speculative engine of this mode.
    #[arg(long, value_enum)]
    speculative: Option<SpeculativeArg>,
    /// Draft tokens verified per step (default: 4; lookahead: the 14 its default sizes need).
    #[arg(long, requires = "speculative")]
    draft_len: Option<usize>,
    /// Probability that each draft position is accepted given the ones before it were.
    #[arg(long, requires = "speculative", default_value_t = 0.7, value_parser = parse_probability)]
    acceptance: f64,
    /// Build a draft model for a `--speculative draft-target` engine: its tokens agree with the
    /// target's with this probability.
    #[arg(long, conflicts_with = "speculative", value_parser = parse_probability)]
    draft_agreement: Option<f64>,
}

/// `--speculative` modes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SpeculativeArg {
    Lookahead,
    Medusa,
    Eagle,
    DraftTarget,
}

impl SpeculativeArg {
    fn mode(self) -> SpeculativeDecodingMode {
        match self {
            SpeculativeArg::Lookahead => SpeculativeDecodingMode::LookaheadDecoding,
            SpeculativeArg::Medusa => SpeculativeDecodingMode::Medusa,
            SpeculativeArg::Eagle => SpeculativeDecodingMode::Eagle,
            SpeculativeArg::DraftTarget => SpeculativeDecodingMode::DraftTokensExternal,
        }
    }
}

fn parse_probability(text: &str) -> Result<f64, String> {
    let p = text.parse::<f64>().map_err(|e| e.to_string())?;
    if (0.0..=1.0).contains(&p) { Ok(p) } else { Err(format!("{p} is not a probability in [0, 1]")) }
}

fn parse_override(text: &str) -> Result<(String, f64), String> {
    let (name, value) = text.split_once('=').ok_or_else(|| format!("expected FIGURE=VALUE, got {text:?}"))?;
    if !OVERRIDABLE_FIGURES.contains(&name) {
        return Err(format!("unknown GPU figure {name:?} (known: {})", OVERRIDABLE_FIGURES.join(", ")));
    }
    let value = value.parse::<f64>().map_err(|e| format!("{name}: {e}"))?;
    Ok((name.to_string(), value))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Build(build) => run_build(*build),
        Command::Predict(predict) => super::sim_model::run_predict(*predict),
        Command::Calibrate(calibrate) => super::sim_model::run_calibrate(*calibrate),
        Command::Presets { json } => {
            if json {
                let doc = serde_json::json!({ "models": ModelPreset::all(), "gpus": GpuPreset::all() });
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                print!("{}", presets_tables());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let model = ModelPreset::from_arg(&args.model)?;
    let model = &model;
    // The engine's split rule, in the flags' words.
    moe_split(args.tp, args.moe_tp, Some(args.moe_ep)).map_err(|e| match args.moe_tp {
        Some(moe_tp) => anyhow::anyhow!("--moe-tp ({moe_tp}) x --moe-ep ({}) must equal --tp ({})", e.moe_ep, e.tp),
        None => anyhow::anyhow!("--moe-ep ({}) must divide --tp ({})", e.moe_ep, e.tp),
    })?;
    let mut builder = SimulatedEngine::builder().model(model);
    builder = match &args.gpu_spec {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let spec: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
            GpuPreset::from_spec_json(&spec).with_context(|| format!("{} does not describe a GPU", path.display()))?;
            builder.gpu_spec(spec)
        }
        None => builder.gpu(args.gpu.as_deref().unwrap_or_default()),
    };
    if let Some(factor) = args.moe_imbalance {
        let factor = trtllm::engine::simulation_json::check_moe_imbalance(factor)
            .map_err(|e| anyhow::anyhow!("--{}", e.replace('_', "-")))?;
        builder = builder.moe_imbalance(factor);
    }
    let mut builder = builder
        .tensor_parallel(args.tp)
        .expert_parallel(args.moe_ep)
        .dtype(args.dtype)
        .kv_cache_dtype(args.kv_cache_dtype)
        .max_batch_size(args.max_batch_size)
        .max_num_tokens(args.max_num_tokens)
        .max_beam_width(args.max_beam_width)
        .tokens_per_block(args.tokens_per_block)
        .max_seq_len(args.max_seq_len.unwrap_or(model.max_position_embeddings))
        .max_input_len(args.max_input_len)
        .clock(args.clock)
        .time_scale(args.time_scale)
        .cuda_graphs(args.cuda_graphs);
    if let Some(path) = &args.calibration {
        let gpu = args.gpu.as_deref().context("--calibration needs a --gpu preset")?;
        for (figure, value) in trtllm::sim::calibrate::GpuCalibration::overrides_from_file(path, gpu)? {
            builder = builder.gpu_override(figure, value);
        }
    }
    for (figure, value) in &args.gpu_overrides {
        builder = builder.gpu_override(figure.clone(), *value);
    }
    if let Some(tokens) = args.kv_cache_max_tokens {
        builder = builder.kv_cache_max_tokens(tokens);
    }
    if args.kv_link.is_some() || args.kv_link_efficiency.is_some() {
        let transfer = trtllm::SimKvTransfer {
            link: args.kv_link.unwrap_or(trtllm::SimKvTransfer::default().link),
            efficiency: args.kv_link_efficiency,
            ..trtllm::SimKvTransfer::default()
        };
        transfer.link().validate().map_err(|e| anyhow::anyhow!("--kv-link-efficiency: {e}"))?;
        builder = builder.kv_transfer(transfer);
    }
    if let Some(rank) = args.lora_max_rank {
        builder = builder.lora(trtllm::sim::SimLora::attention_and_mlp(rank));
    }
    if let Some(kind) = args.speculative {
        let default_len = match kind {
            SpeculativeArg::Lookahead => SimulatedSpeculation::LOOKAHEAD_DEFAULT_DRAFT_TOKENS,
            _ => 4,
        };
        let draft_len = args.draft_len.unwrap_or(default_len);
        if draft_len == 0 {
            anyhow::bail!("--draft-len must be at least 1");
        }
        builder = builder.speculation(SimulatedSpeculation::new(kind.mode(), draft_len, args.acceptance));
    }
    if let Some(agreement) = args.draft_agreement {
        builder = builder.speculation(SimulatedSpeculation::draft_model(agreement));
    }
    let engine = builder.build();
    anyhow::ensure!(engine.time_scale >= 0.0, "--time-scale must be at least 0");
    // The build limits' rules are the engine description's (the same the simulator loads with).
    let perf = engine.perf_model()?;
    engine.write_to(&args.output).with_context(|| format!("writing {}", args.output.display()))?;

    let gpu = perf.gpu();
    let budget = perf.memory_budget(perf.spec().limits(), trtllm::sim::perf_model::DEFAULT_FREE_GPU_MEMORY_FRACTION);
    println!("wrote {}", args.output.display());
    let parallel = match model.shape.moe {
        Some(_) => format!(
            "{} (moe_tp {} x moe_ep {})",
            engine.tp_size,
            engine.tp_size / engine.moe_ep_size,
            engine.moe_ep_size
        ),
        None => engine.tp_size.to_string(),
    };
    println!(
        "  {} ({:.1}B parameters{}) on {parallel} x {} ({}), {} weights, {} KV cache",
        model.name,
        model.shape.parameter_count() / 1e9,
        if model.shape.moe.is_some() {
            format!(", {:.1}B active", model.shape.active_parameter_count() / 1e9)
        } else {
            String::new()
        },
        gpu.name,
        gpu.architecture,
        format!("{:?}", engine.weight_dtype).to_uppercase(),
        match engine.kv_cache_dtype {
            KvCacheDtype::Auto => "16-bit",
            KvCacheDtype::Fp8 => "FP8",
            KvCacheDtype::Int8 => "INT8",
        },
    );
    println!("{budget}");
    if let Some(tokens) = engine.kv_cache_max_tokens {
        println!("  KV cache fixed at {tokens} tokens (simulation.json kv_cache_max_tokens)");
    }
    let prompt = 1024.min(engine.limits.max_input_len);
    let single = perf.single_stream(prompt, 128, engine.limits.max_num_tokens, engine.limits.tokens_per_block);
    println!(
        "  single user: bandwidth bound {:.1} tokens/s, predicted decode {:.1} tokens/s, TTFT {:.1} ms at {prompt} prompt tokens",
        perf.bandwidth_bound_tokens_per_s(),
        single.decode_tokens_per_s,
        single.ttft_ms
    );
    println!(
        "  clock {} (serve, bench and generate take --engine-dir {})",
        format!("{:?}", engine.clock).to_lowercase(),
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The presets as two aligned text tables.
fn presets_tables() -> String {
    let mut out = String::from("Models\n");
    out += &format!(
        "  {:<15} {:<38} {:>7} {:>6} {:>6} {:>9} {:>5} {:>6} {:>7} {:>7}  eos ids\n",
        "id", "name", "params", "layers", "hidden", "heads/kv", "head", "mlp", "vocab", "context"
    );
    for m in ModelPreset::all() {
        let s = &m.shape;
        out += &format!(
            "  {:<15} {:<38} {:>6.2}B {:>6} {:>6} {:>9} {:>5} {:>6} {:>7} {:>7}  {:?}\n",
            m.id,
            m.name,
            s.parameter_count() / 1e9,
            s.num_layers,
            s.hidden_size,
            format!("{}/{}", s.num_heads, s.num_kv_heads),
            s.head_size,
            s.intermediate_size,
            s.vocab_size,
            m.max_position_embeddings,
            m.eos_token_ids
        );
        if let Some(moe) = &s.moe {
            out += &format!(
                "  {:<15} {} experts, top {}, expert MLP {}{}, {:.1}B active\n",
                "",
                moe.num_experts,
                moe.top_k,
                moe.expert_intermediate_size,
                if moe.shared_expert_intermediate_size > 0 {
                    format!(", shared {}", moe.shared_expert_intermediate_size)
                } else {
                    String::new()
                },
                s.active_parameter_count() / 1e9
            );
        }
    }
    out += "\nGPUs (efficiency factors: achieved bandwidth fraction, prefill MFU, fixed per-iteration overhead)\n";
    out += &format!(
        "  {:<14} {:<22} {:<7} {:>7} {:>8} {:>8} {:>8} {:<13} {:>7} {:>6} {:>5} {:>9}\n",
        "id",
        "name",
        "arch",
        "memory",
        "GB/s",
        "BF16 TF",
        "FP8 TF",
        "interconnect",
        "link",
        "BW eff",
        "MFU",
        "overhead"
    );
    for g in GpuPreset::all() {
        out += &format!(
            "  {:<14} {:<22} {:<7} {:>4} GiB {:>8} {:>8} {:>8} {:<13} {:>4} GB/s {:>6} {:>5} {:>6} ms\n",
            g.id,
            g.name,
            g.architecture,
            g.memory_gib,
            g.bandwidth_gb_s,
            g.bf16_tflops,
            g.fp8_tflops.map_or_else(|| "-".to_string(), |t| t.to_string()),
            g.interconnect,
            g.interconnect_gb_s,
            g.bandwidth_efficiency,
            g.mfu,
            g.iteration_overhead_ms
        );
    }
    out
}
