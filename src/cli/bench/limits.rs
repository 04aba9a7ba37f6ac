//! Each point's workload checked against the engine's limits before its first request: a prompt
//! longer than max_input_len is refused by the executor, and one whose output would run past
//! max_seq_len is cut short, so a workload that can ask for either is refused here with the fix,
//! or, with `--clip-lengths`, its drawn lengths are kept within the limits.

use anyhow::bail;
use trtllm::bench::{PromptSource, SampledPrompt, Workload};

use super::plan::Point;

/// The engine's limits on one request, in tokens (0: the target does not say).
#[derive(Debug, Clone, Copy)]
pub struct EngineLimits {
    /// The longest prompt (`max_input_len`).
    pub max_input_len: usize,
    /// The longest prompt and output together (`max_seq_len`).
    pub max_seq_len: usize,
}

/// Checks every point against `limits`; with `clip`, lowers the upper bounds of drawn lengths
/// to what the limits allow instead of refusing them. Returns a console note per clipped point.
pub fn check(points: &mut [Point], limits: EngineLimits, clip: bool) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    for point in points {
        if let Some(note) = check_point(point, limits, clip)? {
            notes.push(note);
        }
    }
    Ok(notes)
}

fn check_point(point: &mut Point, limits: EngineLimits, clip: bool) -> anyhow::Result<Option<String>> {
    let stem = point.stem.clone();
    let workload = &mut point.workload;
    let mut clipped = Vec::new();
    // Prompts: a drawn length's upper bound, a fixed length, or a dataset's longest prompt.
    if limits.max_input_len > 0 {
        let cap = u32::try_from(limits.max_input_len).unwrap_or(u32::MAX);
        match (&mut workload.lengths.input, &workload.source) {
            (Some(d), _) if d.max > cap => {
                if !clip {
                    bail!(
                        "{stem}: prompts drawn from {} reach {} tokens, beyond the engine's max_input_len {cap}: the \
                         executor would refuse every longer one. Lower --input-max to {cap}, pass --clip-lengths to \
                         draw within the engine's limits, or build the engine with a larger --max-input-len",
                        d.describe(),
                        d.max
                    );
                }
                clipped.push(format!("prompts up to {cap} tokens (max_input_len)"));
                *d = d.clone().capped_at("input", cap)?;
            }
            (Some(_), _) => {}
            (None, PromptSource::Random { input_len, .. }) if *input_len > limits.max_input_len => bail!(
                "{stem}: --input-len {input_len} is beyond the engine's max_input_len {cap}: the executor would \
                 refuse every request. Lower --input-len to {cap} or less, or build the engine with a larger \
                 --max-input-len"
            ),
            (None, PromptSource::Dataset(prompts)) => dataset_prompts(&stem, prompts, limits.max_input_len)?,
            (None, PromptSource::Trace(trace)) => dataset_prompts(&stem, &trace.prompts, limits.max_input_len)?,
            _ => {}
        }
    }
    // Prompt and output together.
    if limits.max_seq_len > 0
        && let Some((prompt, output)) = longest_sequence(workload)
        && prompt + output > limits.max_seq_len
    {
        let room = limits.max_seq_len.saturating_sub(prompt);
        match &mut workload.lengths.output {
            Some(d) if clip => {
                clipped
                    .push(format!("outputs up to {room} tokens (max_seq_len {} less the prompt)", limits.max_seq_len));
                *d = d.clone().capped_at("output", u32::try_from(room).unwrap_or(u32::MAX))?;
            }
            drawn => {
                let (option, clip_hint) = match drawn {
                    Some(_) => ("--output-max", ", pass --clip-lengths to draw within the engine's limits"),
                    None => ("--output-len", ""),
                };
                bail!(
                    "{stem}: prompts of up to {prompt} tokens with outputs of up to {output} reach {} tokens, beyond \
                     the engine's max_seq_len {}: the executor would cut those outputs short. Lower {option} to \
                     {room} or less{clip_hint}, or build the engine with a larger --max-seq-len",
                    prompt + output,
                    limits.max_seq_len
                );
            }
        }
    }
    Ok((!clipped.is_empty()).then(|| format!("clipped {stem} to the engine's limits: {}", clipped.join(", "))))
}

/// Refuses a dataset whose prompts include any longer than `max_input_len`.
fn dataset_prompts(stem: &str, prompts: &[SampledPrompt], max_input_len: usize) -> anyhow::Result<()> {
    let over = prompts.iter().filter(|p| p.token_ids.len() > max_input_len).count();
    if over > 0 {
        let longest = prompts.iter().map(|p| p.token_ids.len()).max().unwrap_or(0);
        bail!(
            "{stem}: {over} of {} prompts are longer than the engine's max_input_len {max_input_len} (the longest \
             has {longest} tokens): the executor would refuse them. Drop or shorten them, or build the engine with \
             a larger --max-input-len",
            prompts.len()
        );
    }
    Ok(())
}

/// The prompt and output of the longest sequence a point can ask for, when the workload says
/// (not for sessions, whose prompts grow with their answers).
fn longest_sequence(workload: &Workload) -> Option<(usize, usize)> {
    let drawn_output = workload.lengths.output.as_ref().map(|d| d.max as usize);
    let fixed_output = drawn_output.or(workload.output_len.map(|n| n as usize));
    if let Some(d) = &workload.lengths.input {
        return Some((d.max as usize, fixed_output?));
    }
    let of_prompts = |prompts: &[SampledPrompt]| {
        prompts
            .iter()
            .map(|p| {
                let own = p.output_len.unwrap_or(workload.fallback_output_len) as usize;
                (p.token_ids.len(), fixed_output.unwrap_or(own))
            })
            .max_by_key(|(prompt, output)| prompt + output)
    };
    match &workload.source {
        PromptSource::Random { input_len, .. } | PromptSource::Words { input_len, .. } => {
            Some((*input_len, fixed_output?))
        }
        PromptSource::Dataset(prompts) => of_prompts(prompts),
        PromptSource::Trace(trace) => of_prompts(&trace.prompts),
        _ => None,
    }
}
