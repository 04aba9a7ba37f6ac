//! The doctor's report: named checks with a status, facts, and what to do when one fails.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fine.
    Ok,
    /// Works, but worth knowing (or not needed by this build).
    Warn,
    /// Broken: the report says what to do.
    Fail,
    /// Not run, and why.
    Skipped,
}

/// One check: a name, a status, a one-line summary, facts, and a fix when it failed.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub summary: String,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub facts: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(name: &'static str, summary: impl Into<String>) -> Self {
        Check { name, status: Status::Ok, summary: summary.into(), facts: Map::new(), fix: None }
    }

    pub fn warn(name: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Self {
        Check { status: Status::Warn, fix: Some(fix.into()), ..Check::ok(name, summary) }
    }

    pub fn fail(name: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Self {
        Check { status: Status::Fail, fix: Some(fix.into()), ..Check::ok(name, summary) }
    }

    pub fn skipped(name: &'static str, why: impl Into<String>) -> Self {
        Check { status: Status::Skipped, ..Check::ok(name, why) }
    }

    /// Adds a fact (shown indented under the check, and in the JSON).
    pub fn fact(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.facts.insert(key.to_string(), value.into());
        self
    }
}

/// Every check, in the order they ran.
#[derive(Debug, Default)]
pub struct Report {
    checks: Vec<Check>,
}

impl Report {
    pub fn new() -> Self {
        Report::default()
    }

    pub fn push(&mut self, check: Check) {
        self.checks.push(check);
    }

    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// The human-readable form: one line per check, its facts, and `fix:` lines.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            let tag = match check.status {
                Status::Ok => "ok  ",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
                Status::Skipped => "skip",
            };
            out.push_str(&format!("[{tag}] {}: {}\n", check.name, check.summary));
            for (key, value) in &check.facts {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!("       {key}: {value}\n"));
            }
            if let Some(fix) = &check.fix {
                out.push_str(&format!("       fix: {fix}\n"));
            }
        }
        let failed = self.checks.iter().filter(|c| c.status == Status::Fail).count();
        out.push_str(&match failed {
            0 => "doctor: every check passed\n".to_string(),
            n => format!("doctor: {n} check(s) failed\n"),
        });
        out
    }

    /// The JSON form: the crate version, whether everything passed, and every check.
    pub fn to_json(&self) -> Value {
        json!({
            "trtllm_version": env!("CARGO_PKG_VERSION"),
            "ok": !self.failed(),
            "checks": self.checks,
        })
    }
}
