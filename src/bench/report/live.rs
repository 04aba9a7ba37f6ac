//! The live view of a run (a terminal table drawn with ratatui) and its plain-line fallback.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Gauge, Paragraph, Row, Table};

use crate::bench::metrics::live::LiveSnapshot;

/// Lines the live view takes: a title, the table's header and border, a few finished points,
/// the running one and its progress gauge.
pub const LIVE_VIEW_HEIGHT: u16 = 12;

const HEADER: [&str; 10] = [
    "target / point",
    "done",
    "in flight",
    "queued",
    "out tok/s",
    "TTFT p50/p90/p99 ms",
    "ITL p50/p90/p99 ms",
    "KV",
    "fail",
    "GPU",
];

/// Draws the points finished so far (`finished`, oldest first; the last few fit) and the
/// running one (`current`) as one table, with the running point's progress below.
///
/// ```rust
/// use ratatui::{Terminal, backend::TestBackend};
/// use trtllm::bench::{LiveSnapshot, draw_live_view};
///
/// let mut terminal = Terminal::new(TestBackend::new(140, 12)).unwrap();
/// let now = LiveSnapshot { label: "inprocess c4".into(), done: 3, ..Default::default() };
/// terminal.draw(|f| draw_live_view(f, &[], &now)).unwrap();
/// let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
/// assert!(screen.contains("inprocess c4"));
/// ```
pub fn draw_live_view(frame: &mut Frame<'_>, finished: &[LiveSnapshot], current: &LiveSnapshot) {
    let [table_area, gauge_area] = Layout::vertical([Constraint::Min(4), Constraint::Length(1)]).areas(frame.area());
    // Rows that fit under the header and borders: the latest finished points, then the running one.
    let room = usize::from(table_area.height.saturating_sub(4)).max(1);
    let shown = &finished[finished.len().saturating_sub(room - 1)..];
    let rows: Vec<Row<'_>> = shown
        .iter()
        .map(|s| row(s).style(Style::default().fg(Color::DarkGray)))
        .chain(std::iter::once(row(current).style(Style::default().add_modifier(Modifier::BOLD))))
        .collect();
    let widths = [
        Constraint::Min(18),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(20),
        Constraint::Length(20),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Min(10),
    ];
    let header = Row::new(HEADER.map(Cell::from)).style(Style::default().fg(Color::Cyan));
    let clock = if current.virtual_clock { " simulated" } else { "" };
    let title = format!(" trtllm bench: {:.1} s{clock} ", current.elapsed_s);
    let table = Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, table_area);
    match current.total {
        Some(total) if total > 0 => {
            let ratio = (current.done as f64 / total as f64).clamp(0.0, 1.0);
            let label = format!("{}/{} requests", current.done, total);
            frame.render_widget(
                Gauge::default().gauge_style(Style::default().fg(Color::Green)).ratio(ratio).label(label),
                gauge_area,
            );
        }
        _ => frame.render_widget(Paragraph::new(Line::from(format!("{} requests", current.done))), gauge_area),
    }
}

fn row(s: &LiveSnapshot) -> Row<'static> {
    let done = match s.total {
        Some(total) => format!("{}/{total}", s.done),
        None => s.done.to_string(),
    };
    Row::new([
        s.label.clone(),
        done,
        s.in_flight.to_string(),
        s.queued.to_string(),
        format!("{:.0}", s.output_tok_s),
        three(s.ttft_ms),
        three(s.itl_ms),
        s.kv_utilization.map_or("-".into(), |u| format!("{:.0}%", u * 100.0)),
        s.failed.to_string(),
        s.gpu.clone().unwrap_or_else(|| "-".into()),
    ])
}

fn three(p: Option<[f64; 3]>) -> String {
    p.map_or("-".into(), |[a, b, c]| format!("{} / {} / {}", ms(a), ms(b), ms(c)))
}

/// Milliseconds with as many decimals as help to read them.
fn ms(x: f64) -> String {
    match x {
        x if x >= 100.0 => format!("{x:.0}"),
        x if x >= 10.0 => format!("{x:.1}"),
        x => format!("{x:.2}"),
    }
}

/// One plain progress line, for logs and pipes (no terminal, or `--quiet`).
///
/// ```rust
/// use trtllm::bench::{LiveSnapshot, progress_line};
///
/// let s = LiveSnapshot { label: "c4_in128_out128".into(), done: 5, total: Some(8), in_flight: 3, ..Default::default() };
/// assert!(progress_line(&s).starts_with("c4_in128_out128 0.0 s: 5/8 done, 3 in flight, 0 queued"));
/// ```
pub fn progress_line(s: &LiveSnapshot) -> String {
    let done = match s.total {
        Some(total) => format!("{}/{total}", s.done),
        None => s.done.to_string(),
    };
    let mut line = format!(
        "{} {:.1} s{}: {done} done, {} in flight, {} queued, {} failed, {:.0} out tok/s, TTFT p50/p90/p99 {} ms, ITL p50/p90/p99 {} ms",
        s.label,
        s.elapsed_s,
        if s.virtual_clock { " simulated" } else { "" },
        s.in_flight,
        s.queued,
        s.failed,
        s.output_tok_s,
        three(s.ttft_ms),
        three(s.itl_ms)
    );
    if let Some(kv) = s.kv_utilization {
        line += &format!(", KV {:.0}%", kv * 100.0);
    }
    if let Some(gpu) = &s.gpu {
        line += &format!(", GPU {gpu}");
    }
    line
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    fn screen(finished: &[LiveSnapshot], current: &LiveSnapshot) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(150, LIVE_VIEW_HEIGHT)).unwrap();
        terminal.draw(|f| draw_live_view(f, finished, current)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..buffer.area.height)
            .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol()).collect::<String>())
            .collect()
    }

    fn snapshot(label: &str, done: u64) -> LiveSnapshot {
        LiveSnapshot {
            label: label.into(),
            elapsed_s: 2.5,
            done,
            total: Some(40),
            in_flight: 4,
            queued: 7,
            output_tok_s: 1234.4,
            ttft_ms: Some([12.34, 20.0, 150.0]),
            itl_ms: Some([3.7, 4.1, 9.0]),
            kv_utilization: Some(0.42),
            gpu: Some("287 W 93% 41.2 GiB".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_view_shows_each_points_figures_and_the_progress() {
        let lines = screen(&[snapshot("grpc c1_in128_out8", 40)], &snapshot("grpc c4_in128_out8", 10));
        let text = lines.join("\n");
        for header in ["done", "in flight", "queued", "out tok/s", "TTFT p50/p90/p99 ms", "KV", "GPU"] {
            assert!(text.contains(header), "{header} missing:\n{text}");
        }
        let current = lines.iter().find(|l| l.contains("grpc c4_in128_out8")).expect("the running point");
        for figure in
            ["10/40", " 4 ", " 7 ", "1234", "12.3 / 20.0 / 150", "3.70 / 4.10 / 9.00", "42%", "287 W 93% 41.2 GiB"]
        {
            assert!(current.contains(figure), "{figure} missing in {current:?}");
        }
        assert!(lines.iter().any(|l| l.contains("grpc c1_in128_out8") && l.contains("40/40")), "the finished point");
        assert!(text.contains("10/40 requests"), "the progress gauge:\n{text}");
        assert!(text.contains("trtllm bench: 2.5 s"));
    }

    #[test]
    fn unknown_figures_show_dashes_and_many_points_keep_the_latest() {
        let bare = LiveSnapshot { label: "inprocess c16".into(), ..Default::default() };
        let finished: Vec<LiveSnapshot> = (0..20).map(|i| snapshot(&format!("point-{i:02}"), 40)).collect();
        let text = screen(&finished, &bare).join("\n");
        assert!(text.contains("inprocess c16") && text.contains("point-19") && !text.contains("point-00"), "{text}");
        let line = text.lines().find(|l| l.contains("inprocess c16")).unwrap().to_owned();
        assert!(line.matches(" - ").count() >= 3, "{line}");
    }
}
