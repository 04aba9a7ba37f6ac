//! The `prediction` section: the GPU timing model's expected TTFT, prefill and TPOT next to the measured ones.

use serde_json::{Value, json};

use crate::bench::metrics::iterations::IterationLog;
use crate::bench::report::summary::Summary;
use crate::bench::simulation::EngineSimulation;
use crate::sim::perf_model::BatchWork;
use crate::sim::{ClockMode, PerfModel};

/// Predicted figures for one sweep point, from the engine's [`PerfModel`].
///
/// Single-stream figures are for one request alone on an idle executor with the point's mean
/// actual prompt and output lengths: TTFT (its prefill iterations, chunked as the scheduler
/// chunks), TPOT (the mean decode step over its context growth). With a concurrency above one,
/// also the time of one decode-only iteration with that many requests at the mean context.
///
/// ```
/// use trtllm::bench::Prediction;
/// use trtllm::sim::{GpuPreset, KvCacheDtype, ModelPreset, PerfModel, WeightDtype};
///
/// let shape = ModelPreset::by_id("llama-3.1-8b")?.shape;
/// let model = PerfModel::new(&shape, GpuPreset::by_id("h100-sxm")?, WeightDtype::Bf16, KvCacheDtype::Auto, 1)?;
/// let p = Prediction::new(&model, 1024, 128, 8192, 32, Some(16));
/// assert!((p.ttft_ms - model.ttft_ms(1024, 8192, 32)).abs() < 1e-9);
/// // Sixteen streams read the weights once per step: far less than 16 single steps.
/// let step = p.batch_decode_step_ms.unwrap();
/// assert!(step > model.decode_step_ms(1088) && step < 2.0 * model.decode_step_ms(1088));
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// Prompt tokens the prediction is for.
    pub prompt_tokens: usize,
    /// Output tokens the prediction is for.
    pub output_tokens: usize,
    /// Executor TTFT of one request on an idle executor (its prefill iterations), ms.
    pub ttft_ms: f64,
    /// Mean time per output token after the first, one stream, ms.
    pub tpot_ms: f64,
    /// Prompt tokens per second of that prefill.
    pub prefill_tokens_per_s: f64,
    /// Tokens per second of one decoding stream.
    pub decode_tokens_per_s: f64,
    /// Single-stream decode bound: the weights read once per token at peak bandwidth.
    pub bandwidth_bound_tokens_per_s: f64,
    /// Concurrency of the batch prediction (more than one).
    pub concurrency: Option<usize>,
    /// One decode-only iteration of `concurrency` requests at the mean context, ms.
    pub batch_decode_step_ms: Option<f64>,
    /// The mean context of those requests (prompt plus half the output).
    pub batch_context_tokens: Option<f64>,
}

impl Prediction {
    /// Predicts a point of `prompt` and `output` tokens on an engine chunking prompts into
    /// `max_num_tokens`-token iterations of whole `tokens_per_block` blocks, at `concurrency`.
    pub fn new(
        model: &PerfModel,
        prompt: usize,
        output: usize,
        max_num_tokens: usize,
        tokens_per_block: usize,
        concurrency: Option<usize>,
    ) -> Self {
        let single = model.single_stream(prompt, output, max_num_tokens, tokens_per_block);
        let concurrency = concurrency.filter(|&c| c > 1);
        // Decode step k (k = 1..output-1) reads prompt + k - 1 cached tokens; in a batch whose
        // requests are spread over their decode, the mean context is the mean over k.
        let steps = output.saturating_sub(1);
        let context = prompt as f64 + steps.saturating_sub(1) as f64 / 2.0;
        let batch_decode_step_ms = concurrency.map(|c| {
            let mut work = BatchWork::default();
            for _ in 0..c {
                work.add_generation(context, 1.0);
            }
            model.iteration(&work).total_ms
        });
        Prediction {
            prompt_tokens: prompt,
            output_tokens: output,
            ttft_ms: single.ttft_ms,
            tpot_ms: single.tpot_ms,
            prefill_tokens_per_s: single.prefill_tokens_per_s,
            decode_tokens_per_s: single.decode_tokens_per_s,
            bandwidth_bound_tokens_per_s: model.bandwidth_bound_tokens_per_s(),
            concurrency,
            batch_decode_step_ms,
            batch_context_tokens: concurrency.map(|_| context),
        }
    }

    /// The point's prediction for `summary` (its mean actual prompt and output lengths) on the
    /// simulated engine `sim`; `None` when the engine has no timing model (a fixed
    /// `iteration_ms`, a precision the model does not describe) or nothing completed.
    pub fn for_summary(sim: &EngineSimulation, summary: &Summary, concurrency: Option<usize>) -> Option<Self> {
        let model = sim.perf_model()?;
        let prompt = summary.mean_prompt_tokens().round() as usize;
        let output = summary.mean_output_tokens().round() as usize;
        if summary.throughput.completed == 0 || prompt == 0 {
            return None;
        }
        let limits = sim.description().limits();
        Some(Self::new(model, prompt, output, limits.max_num_tokens, limits.tokens_per_block, concurrency))
    }

    /// The `prediction` object: the predicted figures, the measured ones from the same clock
    /// (executor stamps, and client-side ones when the clock is real), and measured/predicted
    /// ratios. With the real clock at a `time_scale` other than 1 the predictions are compared
    /// after scaling them to wall-clock time (no ratios at `time_scale` 0).
    pub fn section(&self, sim: &EngineSimulation, summary: &Summary, iterations: Option<&IterationLog>) -> Value {
        let scale = match sim.clock() {
            ClockMode::Virtual => 1.0,
            ClockMode::Real => sim.time_scale(),
        };
        let ratio = |measured: Option<f64>, predicted: f64| -> Value {
            match measured {
                Some(m) if scale > 0.0 && predicted > 0.0 => json!(m / (predicted * scale)),
                _ => Value::Null,
            }
        };
        let server = summary.server.as_ref();
        let executor_ttft = server.and_then(|s| s.ttft.mean());
        let executor_prefill = server.and_then(|s| s.prefill.mean());
        let executor_tpot = server.and_then(|s| s.tpot.mean());
        let prefill_rate = executor_prefill.filter(|&ms| ms > 0.0).map(|ms| summary.mean_prompt_tokens() / ms * 1e3);
        let mut section = json!({
            "model": "GPU timing model of the simulated executor (docs/simulator.md)",
            "gpu": sim.gpu(),
            "tp_size": sim.description().parallelism().tp,
            "weights": sim.weights(),
            "kv_cache": sim.kv_cache(),
            "clock": sim.clock(),
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "single_stream": {
                "ttft_ms": self.ttft_ms,
                "prefill_ms": self.ttft_ms,
                "tpot_ms": self.tpot_ms,
                "prefill_tokens_per_s": self.prefill_tokens_per_s,
                "decode_tokens_per_s": self.decode_tokens_per_s,
                "bandwidth_bound_tokens_per_s": self.bandwidth_bound_tokens_per_s,
            },
            "measured": {
                "source": "executor stamps (RequestPerfMetrics), mean over successful measured requests",
                "ttft_ms": executor_ttft,
                "prefill_ms": executor_prefill,
                "tpot_ms": executor_tpot,
                "prefill_tokens_per_s": prefill_rate,
                "decode_tokens_per_s": executor_tpot.filter(|&ms| ms > 0.0).map(|ms| 1e3 / ms),
            },
            "ratio": {
                "ttft": ratio(executor_ttft, self.ttft_ms),
                "prefill": ratio(executor_prefill, self.ttft_ms),
                "tpot": ratio(executor_tpot, self.tpot_ms),
            },
        });
        if sim.clock() == ClockMode::Real {
            if scale != 1.0 {
                section["time_scale"] = json!(scale);
            }
            if summary.streaming {
                let (ttft, tpot) = (summary.ttft.mean(), summary.tpot.mean());
                section["client"] = json!({
                    "ttft_ms": ttft,
                    "tpot_ms": tpot,
                    "ratio_ttft": ratio(ttft, self.ttft_ms),
                    "ratio_tpot": ratio(tpot, self.tpot_ms),
                });
            }
        }
        if let (Some(c), Some(step)) = (self.concurrency, self.batch_decode_step_ms) {
            let measured = iterations.map(|log| decode_only_latencies(log, c)).unwrap_or_default();
            let median = crate::bench::metrics::stats::median(&measured);
            // When the KV cache (or the token budget) never lets all `c` requests decode at once,
            // no iteration matches: the largest batch seen says why.
            let largest = iterations.and_then(|log| {
                log.iterations.iter().filter_map(|s| s.inflight_batching).map(|b| b.num_gen_requests).max()
            });
            section["batch"] = json!({
                "concurrency": c,
                "context_tokens": self.batch_context_tokens,
                "decode_step_ms": step,
                "measured_decode_step_ms": median,
                "measured_iterations": measured.len(),
                "largest_generation_batch": largest,
                "ratio": ratio(median, step),
            });
        }
        section
    }

    /// One line for the console: predicted against measured executor TTFT and TPOT.
    pub fn console_line(&self, stem: &str, section: &Value) -> String {
        let fmt = |v: &Value| v.as_f64().map_or("-".to_owned(), |x| format!("{x:.2}"));
        let measured = &section["measured"];
        let ratio = &section["ratio"];
        // Under load the model's single-request figures are a baseline, not a prediction of the
        // loaded run (queueing and batching come on top): say so rather than print a ratio that
        // reads as a predictor many times wrong.
        let (what, measured_as) = match section.get("batch") {
            Some(_) => ("one request alone (timing model)", "measured under this load"),
            None => ("predicted", "measured"),
        };
        let mut line = format!(
            "prediction {stem}: TTFT {:.2} ms {what}, {} {measured_as} ({}x); TPOT {:.2} ms {what}, {} {measured_as} ({}x)",
            self.ttft_ms,
            fmt(&measured["ttft_ms"]),
            fmt(&ratio["ttft"]),
            self.tpot_ms,
            fmt(&measured["tpot_ms"]),
            fmt(&ratio["tpot"]),
        );
        if let Some(batch) = section.get("batch") {
            line.push_str(&format!(
                "; decode step at {} {:.2} ms predicted, ",
                batch["concurrency"],
                batch["decode_step_ms"].as_f64().unwrap_or(0.0),
            ));
            match batch["measured_decode_step_ms"].as_f64() {
                Some(ms) => line.push_str(&format!("{ms:.2} measured ({}x)", fmt(&batch["ratio"]))),
                None => line.push_str(&format!(
                    "never reached (at most {} requests decoded together)",
                    batch["largest_generation_batch"]
                )),
            }
        }
        line
    }
}

/// Latencies of the iterations that only decoded, with exactly `concurrency` requests.
fn decode_only_latencies(log: &IterationLog, concurrency: usize) -> Vec<f64> {
    log.iterations
        .iter()
        .filter(|s| {
            s.inflight_batching.is_some_and(|b| {
                b.num_ctx_tokens == 0 && b.num_context_requests == 0 && b.num_gen_requests as usize == concurrency
            })
        })
        .map(|s| s.iter_latency_ms)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{GpuPreset, KvCacheDtype, ModelPreset, WeightDtype};

    #[test]
    fn single_stream_matches_the_model_and_batches_amortise_weights() {
        let shape = ModelPreset::by_id("qwen2.5-7b").unwrap().shape;
        let a6000 = GpuPreset::by_id("rtx-a6000").unwrap();
        let model = PerfModel::new(&shape, a6000, WeightDtype::Bf16, KvCacheDtype::Auto, 1).unwrap();
        let one = Prediction::new(&model, 360, 256, 8192, 32, Some(1));
        assert_eq!(one.concurrency, None, "no batch figure at concurrency 1");
        assert!((one.decode_tokens_per_s - 44.0).abs() < 0.5);
        let many = Prediction::new(&model, 360, 256, 8192, 32, Some(32));
        let step = many.batch_decode_step_ms.unwrap();
        // Memory-bound: 32 streams add only their KV reads to one pass over the weights.
        assert!(step > one.tpot_ms && step < 2.0 * one.tpot_ms, "{step} vs {}", one.tpot_ms);
        assert_eq!(many.batch_context_tokens, Some(360.0 + 127.0));
    }
}
