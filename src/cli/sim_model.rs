//! `trtllm sim predict` (the timing model's time and its parts for one batch) and `trtllm sim calibrate`
//! (fit a GPU's figures to bench iteration logs or a kernel table, write a calibration file).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use trtllm::sim::calibrate::{self, GpuCalibration, KERNEL_FIGURES, Sample};
use trtllm::sim::kernel_table::{self, error_summary};
use trtllm::sim::perf_model::BatchWork;
use trtllm::sim::{GpuPreset, PerfModel};

/// `trtllm sim predict`: the modelled time of one iteration.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// The engine directory (config.json, simulation.json) whose model to ask.
    #[arg(long)]
    engine_dir: PathBuf,
    /// Decode rows: `B:L` is B sequences with L cached tokens each (repeatable).
    #[arg(long = "decode", value_name = "B:L", value_parser = parse_pair)]
    decode: Vec<(f64, f64)>,
    /// A prefill chunk: `T` new tokens, or `T:P` after P cached tokens (repeatable).
    #[arg(long = "prefill", value_name = "T[:P]", value_parser = parse_chunk)]
    prefill: Vec<(f64, f64)>,
    /// Every decode sequence also runs the engine's speculative drafter (Medusa heads, Eagle layer).
    #[arg(long)]
    drafting: bool,
    /// Adapter weights the batch's LoRA adapters read, bytes (each distinct adapter once).
    #[arg(long, default_value_t = 0.0)]
    lora_weight_bytes: f64,
    /// FLOPs the batch's LoRA adapters add.
    #[arg(long, default_value_t = 0.0)]
    lora_flops: f64,
    /// Launch kernels from CUDA graphs.
    #[arg(long)]
    cuda_graphs: bool,
    /// Apply a calibration file's figures.
    #[arg(long)]
    calibration: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `trtllm sim calibrate`: fit a GPU's figures to measurements.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// GPU preset whose figures to refine (default: the engine's simulation.json GPU).
    #[arg(long)]
    gpu: Option<String>,
    /// The engine the bench run used (its config.json gives the model).
    #[arg(long, requires = "bench")]
    engine_dir: Option<PathBuf>,
    /// A `trtllm bench` output stem: reads `<STEM>.iters.jsonl` and `<STEM>.requests.jsonl`.
    #[arg(long, value_name = "STEM", requires = "engine_dir", conflicts_with = "kernel_table")]
    bench: Option<PathBuf>,
    /// Kernel tables in the shared format (roofline.json, knee.json, shards.json), Llama-3.1-8B shapes.
    #[arg(long, num_args = 1..)]
    kernel_table: Vec<PathBuf>,
    /// Where to write the calibration file (JSON).
    #[arg(long)]
    output: PathBuf,
    /// Print the fit as JSON (measurements used, fitted figures, held-out error) instead of a table.
    #[arg(long)]
    json: bool,
}

fn parse_pair(text: &str) -> Result<(f64, f64), String> {
    let (a, b) = text.split_once(':').ok_or_else(|| format!("expected B:L, got {text:?}"))?;
    let parse =
        |s: &str| s.parse::<f64>().ok().filter(|v| *v >= 0.0 && v.is_finite()).ok_or(format!("bad number {s:?}"));
    Ok((parse(a)?, parse(b)?))
}

fn parse_chunk(text: &str) -> Result<(f64, f64), String> {
    if text.contains(':') { parse_pair(text) } else { parse_pair(&format!("{text}:0")) }
}

fn read(path: &PathBuf) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

pub fn run_predict(args: PredictArgs) -> anyhow::Result<ExitCode> {
    if args.decode.is_empty() && args.prefill.is_empty() {
        anyhow::bail!("give the batch: --decode B:L and/or --prefill T[:P]");
    }
    let mut model = PerfModel::from_engine_dir(&args.engine_dir)?;
    if let Some(path) = &args.calibration {
        let gpu = GpuCalibration::parse(&read(path)?)?.apply()?;
        model = PerfModel::from_spec(model.spec().clone(), &gpu)?;
    }
    let model = model.with_cuda_graphs(args.cuda_graphs);
    let mut work = BatchWork::default();
    for &(batch, context) in &args.decode {
        work.add_generation(context, batch);
        if args.drafting {
            work.drafter_requests += batch;
        }
    }
    work.lora_weight_bytes = args.lora_weight_bytes;
    work.lora_flops = args.lora_flops;
    for &(tokens, past) in &args.prefill {
        work.add_context(tokens, past, true);
    }
    let time = model.iteration(&work);
    if args.json {
        let ops: Vec<serde_json::Value> = model
            .op_times(&work)
            .into_iter()
            .map(|(op, ms)| serde_json::json!({"name": op.name, "part": op.part, "count": op.count, "ms": ms}))
            .collect();
        let doc = serde_json::json!({ "work": work, "time": time, "ops": ops });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} on {}: {:.3} ms per iteration", args.engine_dir.display(), model.gpu().id, time.total_ms);
    // Every operation of the list the iteration time folds, with its runs per iteration.
    for (op, ms) in model.op_times(&work) {
        if ms > 0.0 {
            println!("  {:34}{ms:10.3} ms  (x{})", op.name, op.count);
        }
    }
    println!("  {:34}{:10.3} ms", "host overhead", time.overhead_ms);
    Ok(ExitCode::SUCCESS)
}

pub fn run_calibrate(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let (samples, spec, figures, default_gpu, source) = if let (Some(stem), Some(dir)) = (&args.bench, &args.engine_dir)
    {
        let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", stem.display()));
        let iterations = read(&with(".iters.jsonl"))?;
        let samples = calibrate::bench_samples(&iterations, &read(&with(".requests.jsonl"))?)?;
        let total = iterations.lines().filter(|l| !l.trim().is_empty()).count();
        let model = PerfModel::from_engine_dir(dir)?;
        let figures = calibrate::iteration_figures(model.spec().weights().fp8_math);
        // Iterations the requests file does not explain (chunked prompts, warm-up, speculation) are left out.
        let source =
            format!("bench {}: {} of {total} iterations explained by its requests", stem.display(), samples.len());
        (samples, Some(model.spec().clone()), figures, model.gpu().id.clone(), source)
    } else if !args.kernel_table.is_empty() {
        let mut samples = Vec::new();
        let (mut roofline, mut knee) = (String::from("{}"), String::from("{}"));
        for path in &args.kernel_table {
            let text = read(path)?;
            let doc: serde_json::Value = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
            if doc.get("gemm").is_some() {
                samples.extend(kernel_table::gemm_rows(&text)?.into_iter().map(Sample::Kernel));
            }
            if doc.get("decode").is_some() || doc.get("prefill").is_some() {
                roofline = text.clone();
            }
            if doc.get("mixed").is_some() || doc.get("decode_large").is_some() {
                knee = text;
            }
        }
        samples.extend(kernel_table::pass_rows(&roofline, &knee)?.into_iter().map(Sample::Kernel));
        let names: Vec<String> = args.kernel_table.iter().map(|p| p.display().to_string()).collect();
        (samples, None, KERNEL_FIGURES.to_vec(), "h100-sxm".to_string(), format!("kernel table {}", names.join(", ")))
    } else {
        anyhow::bail!("give measurements: --bench STEM --engine-dir DIR, or --kernel-table FILE...");
    };
    let preset = GpuPreset::by_id(args.gpu.as_deref().unwrap_or(&default_gpu))?;
    let fit = calibrate::fit(preset, spec.as_ref(), &samples, &figures)?;
    let (median, p90, worst) = error_summary(&fit.held_out_errors);
    if args.json {
        let fitted = serde_json::json!({
            "measurements": samples.len(),
            "source": source,
            "gpu": preset.id,
            "figures": fit.figures,
            "held_out_error": [median, p90, worst],
            "output": args.output,
        });
        println!("{}", serde_json::to_string_pretty(&fitted)?);
    } else {
        println!("{} measurements ({source}), fitted on half, checked on the other half", samples.len());
        println!("  {:30}{:>12}{:>12}", "figure", "preset", "fitted");
        for (name, value) in &fit.figures {
            println!("  {name:30}{:>12.4}{value:>12.4}", preset.figure(name).unwrap_or(f64::NAN));
        }
        println!(
            "  held-out error: median {:.1}%, p90 {:.1}%, worst {:.1}%",
            median * 100.0,
            p90 * 100.0,
            worst * 100.0
        );
    }
    let calibration =
        GpuCalibration { gpu: preset.id.clone(), figures: fit.figures, source, held_out_error: [median, p90, worst] };
    std::fs::write(&args.output, serde_json::to_string_pretty(&calibration)? + "\n")
        .with_context(|| format!("writing {}", args.output.display()))?;
    if !args.json {
        println!("wrote {} (use: trtllm sim build --calibration {})", args.output.display(), args.output.display());
    }
    Ok(ExitCode::SUCCESS)
}
