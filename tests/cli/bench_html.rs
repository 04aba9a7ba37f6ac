//! `trtllm bench` writes one self-contained HTML report per run and per comparison, leading with
//! the answer; a real headless Chromium renders it, and its first screen shows the results table
//! and the sweep plots' lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// Chromium on the `PATH` (`scripts/setup.sh --tests`, which `scripts/test.sh` runs first,
/// installs it). The test fails without it: a report nobody rendered is not checked.
fn chromium() -> PathBuf {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        let out = Command::new("sh").args(["-c", &format!("command -v {name}")]).output().ok()?;
        out.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    });
    found.expect("chromium is not on the PATH: run scripts/setup.sh --tests (it installs chromium) before this test")
}

/// Runs headless Chromium on `page` with a fresh profile, with `extra` arguments; its stdout.
fn headless(chromium: &Path, page: &Path, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Pixels of `png` as RGB triples, with its width and height.
fn pixels(png_path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let rgb = buf[..info.buffer_size()].chunks(channels).map(|p| [p[0], p[1], p[2]]).collect();
    (info.width, info.height, rgb)
}

fn near(p: [u8; 3], c: [u8; 3], tolerance: i32) -> bool {
    p.iter().zip(c).all(|(&a, b)| (i32::from(a) - i32::from(b)).abs() <= tolerance)
}

/// The deepest nesting of `<table>` elements in `html`.
fn table_depth(html: &str) -> usize {
    let (mut depth, mut deepest) = (0_usize, 0_usize);
    let mut rest = html;
    while let Some(at) = rest.find("table") {
        if rest[..at].ends_with("</") {
            depth = depth.saturating_sub(1);
        } else if rest[..at].ends_with('<') {
            depth += 1;
            deepest = deepest.max(depth);
        }
        rest = &rest[at + 5..];
    }
    deepest
}

#[test]
fn the_report_is_self_contained_and_renders_its_tables_and_plots() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    let run = common::cli::bench(&[
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--concurrency",
        "1,4",
        "--input-len",
        "16",
        "--output-len",
        "32",
        "--num-prompts",
        "16",
        "--gpu-sample-interval",
        "0.02",
        "--quiet",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&run.stdout).contains("report: "));
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Opens offline: nothing to fetch (the SVG namespace URI is a name, not a request).
    for fetch in ["src=", "href=", "<link", "<script", "url(", "@import", "<iframe"] {
        assert!(!html.contains(fetch), "the report fetches something: {fetch}");
    }
    for text in
        ["Settings", "Results", "Sweep", "c1_in16_out32", "c4_in16_out32", "The runner's own error", "GPU telemetry"]
    {
        assert!(html.contains(text), "{text} missing");
    }
    let svg_files = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert!(svg_files >= 3, "the sweep's plots and the GPU telemetry plots: {svg_files}");
    assert_eq!(html.matches("<svg").count(), svg_files, "every plot inline");

    // It leads with the answer: the results, then the sweep's plots (latency against throughput
    // first), then the notes, settings and each point's details with its own plots.
    let at = |text: &str| html.find(text).unwrap_or_else(|| panic!("{text} missing"));
    assert!(at("<h2>Results</h2>") < at("<h2>Sweep</h2>"));
    assert!(at("<h2>Sweep</h2>") < at("<svg") && at("<svg") < at("<h2>Settings</h2>"));
    assert!(at("latency_vs_throughput.svg") < at("ttft_vs_inflight_tokens.svg"));
    assert!(at("ttft_vs_inflight_tokens.svg") < at("<h2>Points</h2>"));
    assert!(at("<h2>Points</h2>") < at("c1_in16_out32.gpu.svg"), "a point's telemetry goes with its details");
    // Points named by their load, in the table and beside each point of the sweep's plots.
    assert!(html.contains("<td>1 user</td>") && html.contains("<td>4 users</td>"));
    let sweep = &html[at("<h2>Sweep</h2>")..at("<h2>Points</h2>")];
    assert_eq!(sweep.matches("\nc1\n</text>").count(), 2, "c1 labelled in both sweep plots");
    assert_eq!(sweep.matches("\nc4\n</text>").count(), 2, "c4 labelled in both sweep plots");
    // Readable tables: the host's timer jitter in words, sections flat (a list of GPUs is the
    // one table inside a table).
    assert!(html.contains("sleeps of 1.0 ms overslept by p50"), "host timer jitter in words");
    assert!(!html.contains("{&quot;") && !html.contains("{\"samples"), "no raw JSON in a cell");
    assert!(table_depth(&html) <= 2, "tables nested {} deep", table_depth(&html));

    let chromium = chromium();
    let dom = headless(&chromium, &page, &["--dump-dom"]);
    assert!(dom.contains("<h2>Results</h2>") && dom.contains("c4_in16_out32"), "the DOM as rendered");
    // The first screen (1280x900) holds the results and the sweep's plot lines.
    let shot = out.path().join("report.png");
    headless(&chromium, &page, &["--window-size=1280,900", &format!("--screenshot={}", shot.display())]);
    let (width, height, rgb) = pixels(&shot);
    assert_eq!((width, height), (1280, 900));
    let white = rgb.iter().filter(|&&p| near(p, [255, 255, 255], 3)).count();
    assert!(white < rgb.len() * 97 / 100, "the page is not blank");
    let distinct: std::collections::HashSet<[u8; 3]> = rgb.iter().copied().collect();
    assert!(distinct.len() > 50, "text, tables and plots: {} colours", distinct.len());
    // The headings' green rules, the tables' header shading and the plots' line colour.
    // (Lines are anti-aliased: their colour is matched loosely.)
    for (what, colour, tolerance, least) in [
        ("heading rule", [0x22, 0xaa, 0x66], 12, 500),
        ("table header", [0xe8, 0xf4, 0xec], 6, 2_000),
        ("plot line", [230, 25, 75], 30, 50),
    ] {
        let count = rgb.iter().filter(|&&p| near(p, colour, tolerance)).count();
        assert!(count >= least, "{what}: {count} pixels of {colour:?} on the first screen");
    }
}

#[test]
fn bench_compare_writes_its_report_beside_b() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        common::cli::small_bench(engine.path(), &out.path().join(name), &["--quiet"]);
    }
    let (a, b) = (out.path().join("a/c2_in16_out8.json"), out.path().join("b/c2_in16_out8.json"));
    let compare = common::cli::bench(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&compare.stdout).contains("report in "));
    let html = std::fs::read_to_string(out.path().join("b/c2_in16_out8.compare.html")).unwrap();
    assert!(html.contains("A (baseline)") && html.contains("B (candidate)") && html.contains("output_throughput"));
    assert!(!html.contains("src=") && !html.contains("href="));
}
