//! Samples the GPUs through NVML for a while and writes what they reported as JSON: run it
//! while something works the GPU to check the bench's GPU telemetry on real hardware.
//!
//! ```sh
//! cargo run --release --example gpu_telemetry -- 30 gpu_telemetry.json   # 30 s, every 200 ms
//! ```
//!
//! The file holds the driver version, the GPUs' names, the summary's `gpu_telemetry` averages
//! and every sample; the averages are printed too.

use std::time::Duration;

use trtllm::bench::{NvmlSource, TelemetrySampler, telemetry_section};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().as_deref().unwrap_or("10").parse()?;
    let out = args.next().unwrap_or_else(|| "gpu_telemetry.json".into());
    let interval_ms: u64 = args.next().as_deref().unwrap_or("200").parse()?;
    let source = NvmlSource::open(None)?;
    let (names, driver) = (source.names().to_vec(), source.driver_version());
    eprintln!("sampling {} GPU(s) {names:?} for {seconds} s every {interval_ms} ms", names.len());
    let sampler = TelemetrySampler::start(Box::new(source), Duration::from_millis(interval_ms), |_| {});
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let samples = sampler.finish();
    let summary = telemetry_section("nvml", &samples);
    println!("{}", serde_json::to_string_pretty(&summary)?);
    let document = serde_json::json!({
        "driver_version": driver,
        "gpus": names,
        "seconds": seconds,
        "interval_ms": interval_ms,
        "gpu_telemetry": summary,
        "samples": samples,
    });
    std::fs::write(&out, serde_json::to_string_pretty(&document)? + "\n")?;
    eprintln!("wrote {out}");
    Ok(())
}
