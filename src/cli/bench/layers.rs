//! `trtllm bench --target a,b,c`: the same workload against each target in turn, then a table of
//! what each layer adds to TTFT and ITL over the first one.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitCode;

use anyhow::{Context, bail};
use trtllm::bench::{LayerComparison, LayerFigures, RequestRecord, RunInfo, layers_csv};

use super::args::RunArgs;

/// Runs `trtllm bench` for one target (the caller's single-target run, passed in so that this
/// module does not depend on its parent).
pub type RunOne = fn(RunArgs) -> Pin<Box<dyn Future<Output = anyhow::Result<ExitCode>>>>;

/// Whether `--target` names several targets.
pub fn is_layer_list(target: &str) -> bool {
    target.contains(',')
}

/// Runs every target of the comma list with the same options (and so the same seed and
/// prompts), each into its own subdirectory, then writes and prints the comparison.
pub async fn run(args: RunArgs, run_one: RunOne) -> anyhow::Result<ExitCode> {
    let targets = parse_targets(&args.target)?;
    let output_dir = match &args.output_dir {
        Some(dir) => dir.clone(),
        None => PathBuf::from("bench-results").join(format!("{}-layers", RunInfo::now_date())),
    };
    let mut runs: Vec<(String, PathBuf)> = Vec::new();
    let mut all_ok = true;
    for target in &targets {
        let dir = output_dir.join(slug(target));
        let mut one = args.clone();
        one.target = target.clone();
        one.output_dir = Some(dir.clone());
        one.label = Some(args.label.as_ref().map_or_else(|| target.clone(), |l| format!("{l} {target}")));
        eprintln!("layer {target}: results in {}", dir.display());
        match run_one(one).await {
            Ok(code) => {
                all_ok &= code == ExitCode::SUCCESS;
                runs.push((target.clone(), dir));
            }
            Err(error) => {
                all_ok = false;
                eprintln!("layer {target} failed: {}", crate::cli::error_report(&error));
            }
        }
    }
    let comparisons = compare_runs(&runs)?;
    let mut markdown = String::new();
    for comparison in &comparisons {
        markdown.push_str(&comparison.markdown());
        markdown.push('\n');
    }
    print!("{markdown}");
    write(&output_dir.join("layers.md"), markdown.as_bytes())?;
    write(&output_dir.join("layers.csv"), layers_csv(&comparisons).as_bytes())?;
    write(&output_dir.join("layers.json"), &serde_json::to_vec_pretty(&comparisons)?)?;
    println!("layer comparison in {}", output_dir.join("layers.md").display());
    Ok(if all_ok && !comparisons.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The targets of a comma list: at least two, none empty, none twice.
fn parse_targets(list: &str) -> anyhow::Result<Vec<String>> {
    let targets: Vec<String> = list.split(',').map(|t| t.trim().to_owned()).collect();
    if targets.iter().any(String::is_empty) {
        bail!("--target {list:?}: an empty entry in the comma list");
    }
    if targets.len() < 2 {
        bail!("--target {list:?}: a comparison needs at least two targets");
    }
    let unique: BTreeSet<&String> = targets.iter().collect();
    if unique.len() != targets.len() {
        bail!("--target {list:?}: a target appears twice (each writes to a directory named after it)");
    }
    Ok(targets)
}

/// A directory name for a target: `grpc://127.0.0.1:50051` → `grpc-127.0.0.1-50051`.
fn slug(target: &str) -> String {
    let mut out = String::new();
    for c in target.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// One comparison per point the first (baseline) run wrote, from every run's per-request files.
fn compare_runs(runs: &[(String, PathBuf)]) -> anyhow::Result<Vec<LayerComparison>> {
    let Some((_, base_dir)) = runs.first() else { return Ok(Vec::new()) };
    let mut comparisons = Vec::new();
    for stem in point_stems(base_dir)? {
        let mut layers = Vec::new();
        for (target, dir) in runs {
            let path = dir.join(format!("{stem}.requests.jsonl"));
            let records = match path.exists() {
                true => read_records(&path)?,
                false => Vec::new(),
            };
            layers.push(LayerFigures::from_records(target, &records));
        }
        comparisons.push(LayerComparison { point: stem, layers });
    }
    Ok(comparisons)
}

/// The point stems of a run directory (`<stem>.requests.jsonl`), in name order.
fn point_stems(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut stems = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".requests.jsonl") {
            stems.push(stem.to_owned());
        }
    }
    stems.sort();
    Ok(stems)
}

fn read_records(path: &Path) -> anyhow::Result<Vec<RequestRecord>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("a bad request row in {}", path.display())))
        .collect()
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_become_distinct_directory_names() {
        assert_eq!(slug("grpc://127.0.0.1:50051"), "grpc-127.0.0.1-50051");
        assert_eq!(slug("http://127.0.0.1:30000/v1"), "http-127.0.0.1-30000-v1");
        assert_eq!(slug("inprocess"), "inprocess");
    }

    #[test]
    fn a_list_needs_two_distinct_nonempty_targets() {
        assert_eq!(parse_targets("inprocess, grpc://h:1").unwrap(), ["inprocess", "grpc://h:1"]);
        for bad in ["inprocess,", "inprocess,inprocess", ",grpc://h:1"] {
            assert!(parse_targets(bad).is_err(), "{bad}");
        }
    }
}
