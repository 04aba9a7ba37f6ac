//! The figures the walkthroughs in docs/ quote are rerun: each marked command block runs as shown
//! and every figure marked beside it must agree with what the commands print or write
//! (tests/common/doc_figures.rs describes the markers).

use std::path::Path;

use crate::common::doc_figures::{check_doc, parse, run_check};

/// The docs whose walkthroughs carry checked figures; a marker anywhere else fails
/// `every_doc_with_checked_figures_is_run`.
const CHECKED_DOCS: [&str; 2] = ["docs/bench.md", "docs/tuning.md"];

fn assert_figures_hold(doc: &str) {
    match check_doc(doc) {
        Ok(figures) => assert!(figures > 0, "{doc} marks no figure"),
        Err(failures) => panic!("{} figure(s) of {doc} no longer hold:\n{}", failures.len(), failures.join("\n")),
    }
}

#[test]
fn bench_md_walkthrough_figures_hold() {
    assert_figures_hold("docs/bench.md");
}

#[test]
fn tuning_md_walkthrough_figures_hold() {
    assert_figures_hold("docs/tuning.md");
}

#[test]
fn every_doc_with_checked_figures_is_run() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    for entry in std::fs::read_dir(docs).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
            let text = std::fs::read_to_string(&path).unwrap();
            let checks = parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                checks.is_empty() || CHECKED_DOCS.contains(&name.as_str()),
                "{name} has checked figures: list it in CHECKED_DOCS"
            );
        }
    }
}

/// A small doc whose commands print and write known figures (no engine needed), quoting them
/// `ttft` and `tokens` as given.
fn fixture(ttft: &str, tokens: &str) -> String {
    format!(
        "# Fixture\n\
         \n\
         <!-- checked figures: the next sh block runs in an empty directory\n\
         figure \"a median TTFT of **{{3.1}} s**\" from json out/summary.json /ttft/p50 * 0.001 within 2%\n\
         figure \"{{853.4}} output tokens/s\" from stdout /c=64 out tok/s (\\S+)/ within 1%\n\
         -->\n\
         \n\
         ```sh\n\
         mkdir out\n\
         printf '{{\"ttft\": {{\"p50\": 3139.01}}}}' > out/summary.json\n\
         echo 'c=64 out tok/s 853.4'\n\
         ```\n\
         \n\
         Users saw a median TTFT of\n\
         **{ttft} s** and {tokens} output\n\
         tokens/s.\n"
    )
}

fn check_fixture(text: &str) -> Vec<String> {
    let checks = parse("fixture.md", text).unwrap();
    assert_eq!(checks.len(), 1);
    run_check("fixture.md", text, &checks[0], Path::new(env!("CARGO_BIN_EXE_trtllm")))
}

#[test]
fn the_checker_passes_figures_within_tolerance_and_rounding() {
    // 3.1 s quotes 3.139 s (rounding plus 2%); the quote spans a line break.
    assert_eq!(check_fixture(&fixture("3.1", "853.4")), Vec::<String>::new());
}

#[test]
fn the_checker_names_doc_line_figure_quoted_and_measured_when_a_figure_drifts() {
    // The doc quotes 5.2 s where the commands give 3.139 s, and 853.0 where they print 853.4
    // (0.05%: within 1%). The marker quotes the drifted text so that it is found.
    let text = fixture("5.2", "853.0").replace("**{3.1} s**", "**{5.2} s**").replace("{853.4}", "{853.0}");
    let failures = check_fixture(&text);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let failure = &failures[0];
    assert!(failure.starts_with("fixture.md:14: figure \"a median TTFT of **5.2 s**\""), "{failure}");
    assert!(failure.contains("quotes 5.2 but the commands now give 3.1390"), "{failure}");
    assert!(failure.contains("more than 2% apart"), "{failure}");
}

#[test]
fn the_checker_fails_when_a_marked_figure_is_no_longer_in_the_text() {
    // The prose was edited to 3.3 s; the marker still names 3.1 s.
    let failures = check_fixture(&fixture("3.3", "853.4"));
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("fixture.md:4: figure \"a median TTFT of **3.1 s**\" is marked but not found"),
        "{}",
        failures[0]
    );
}

#[test]
fn the_checker_refuses_markers_it_cannot_read() {
    let unreadable = fixture("3.1", "853.4").replace("within 2%", "roughly");
    let err = parse("fixture.md", &unreadable).unwrap_err();
    assert!(err.starts_with("fixture.md:4: a figure line this checker cannot read"), "{err}");
    let no_block = fixture("3.1", "853.4").replace("```sh", "```text");
    let err = parse("fixture.md", &no_block).unwrap_err();
    assert_eq!(err, "fixture.md:3: no sh block follows the marker");
}
