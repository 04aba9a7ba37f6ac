//! An error as the command prints it: its chain of causes, each said once.

/// The error and its causes joined by `: `, leaving out a cause whose text an error above it
/// already carries. Many errors put their source in their own message (`reading {path}:
/// {source}`) and return it as `source()` as well; printing the chain as it is would say that
/// cause twice (`No such file or directory (os error 2): No such file or directory (os error 2)`).
pub fn error_report(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if part.is_empty() || text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text += ": ";
        }
        text += &part;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that says its source in its message and returns it as its source too.
    #[derive(Debug, thiserror::Error)]
    #[error("reading {path}: {source}")]
    struct Reading {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_says_is_printed_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let said = io.to_string();
        let error = anyhow::Error::new(Reading { path: "a.json".into(), source: io }).context("--calibration");
        assert_eq!(format!("{error:#}").matches(&said).count(), 2, "the chain as anyhow prints it");
        let report = error_report(&error);
        assert_eq!(report, format!("--calibration: reading a.json: {said}"));
    }

    #[test]
    fn causes_not_yet_said_are_kept_in_order() {
        let error = anyhow::anyhow!("the disk is full").context("writing summary.json").context("bench");
        assert_eq!(error_report(&error), "bench: writing summary.json: the disk is full");
    }
}
