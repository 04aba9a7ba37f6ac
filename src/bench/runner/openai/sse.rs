//! Server-sent-events framing for the HTTP target, over the response body's byte chunks without
//! a string per event: each event's `data` is handed on as a slice borrowed from the chunk that
//! holds it whole (the usual case: one `data:` line inside one read), or from one reused buffer
//! when it spans reads or several `data:` lines. Only an incomplete line is kept between reads.
//!
//! Follows the WHATWG event-stream grammar where it matters here: LF, CRLF and CR line ends (a
//! CRLF may be split across reads), `data:` with or without its one leading space, several
//! `data:` lines joined with `\n`, comment lines (`:`) and other fields ignored, a leading BOM
//! skipped. Bytes are framed before any UTF-8 decoding, so a read may end anywhere, inside a
//! multi-byte character included. One deliberate leniency: an event still open when the stream
//! ends (no blank line after its last `data:`) is dispatched rather than dropped.

use std::ops::ControlFlow;

/// Splits a byte stream into SSE events; feed it each read, then call [`SseParser::finish`].
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// The current line's bytes when it started in an earlier read.
    tail: Vec<u8>,
    /// The current event's data when it cannot be borrowed (joined lines, or spanning reads).
    data: Vec<u8>,
    /// Whether the current event has had a `data` field (so `data` may be legitimately empty).
    has_data: bool,
    /// The last read ended on a CR: a LF opening the next read belongs to that line end.
    skip_lf: bool,
    /// How far the stream's start has been checked for a BOM (3: done).
    seen: usize,
}

/// `data`'s value if `line` is a `data` field.
fn data_value(line: &[u8]) -> Option<&[u8]> {
    let (name, value) = match memchr::memchr(b':', line) {
        Some(0) => return None, // a comment
        Some(colon) => (&line[..colon], &line[colon + 1..]),
        None => (line, &line[line.len()..]),
    };
    if name != b"data" {
        return None;
    }
    Some(value.strip_prefix(b" ").unwrap_or(value))
}

/// Where the current event's data lives while a read is being framed.
enum Pending {
    /// No data in this read yet (any earlier data is in the parser's buffer).
    None,
    /// One `data` value, a range of the current read.
    Borrowed(usize, usize),
}

impl SseParser {
    /// Frames one read; `on_event` gets each complete event's data and may stop the stream
    /// (`Break`), in which case the rest of the read is dropped.
    pub(crate) fn feed(&mut self, chunk: &[u8], mut on_event: impl FnMut(&[u8]) -> ControlFlow<()>) -> ControlFlow<()> {
        let mut chunk = chunk;
        if chunk.is_empty() {
            return ControlFlow::Continue(());
        }
        if self.seen < 3 {
            chunk = self.skip_bom(chunk);
            if chunk.is_empty() {
                return ControlFlow::Continue(());
            }
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let [b'\n', rest @ ..] = chunk {
                chunk = rest;
            }
        }
        let mut pos = 0;
        // A line begun in an earlier read: complete it from this one, framed from the buffer.
        if !self.tail.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) else {
                self.tail.extend_from_slice(chunk);
                return ControlFlow::Continue(());
            };
            self.tail.extend_from_slice(&chunk[..end]);
            pos = self.line_end(chunk, end);
            let line = std::mem::take(&mut self.tail);
            let flow = self.owned_line(&line, &mut on_event);
            self.tail = line;
            self.tail.clear();
            flow?;
        }
        let mut pending = Pending::None;
        while let Some(offset) = memchr::memchr2(b'\n', b'\r', &chunk[pos..]) {
            let end = pos + offset;
            let line = &chunk[pos..end];
            pos = self.line_end(chunk, end);
            if line.is_empty() {
                // Dispatch.
                let flow = match pending {
                    Pending::Borrowed(start, stop) if self.data.is_empty() && !self.has_data => {
                        on_event(&chunk[start..stop])
                    }
                    Pending::Borrowed(start, stop) => {
                        self.push_data(&chunk[start..stop]);
                        self.dispatch(&mut on_event)
                    }
                    Pending::None => self.dispatch(&mut on_event),
                };
                pending = Pending::None;
                flow?;
            } else if let Some(value) = data_value(line) {
                if let Pending::Borrowed(start, stop) = pending {
                    self.push_data(&chunk[start..stop]);
                }
                if !self.has_data && matches!(pending, Pending::None) {
                    let start = value.as_ptr() as usize - chunk.as_ptr() as usize;
                    pending = Pending::Borrowed(start, start + value.len());
                } else {
                    pending = Pending::None;
                    self.push_data(value);
                }
            }
        }
        // The event stays open past this read: its data moves to the buffer.
        if let Pending::Borrowed(start, stop) = pending {
            self.push_data(&chunk[start..stop]);
        }
        self.tail.extend_from_slice(&chunk[pos..]);
        ControlFlow::Continue(())
    }

    /// The end of the stream: a last line without its line end, and an event still open, are
    /// dispatched.
    pub(crate) fn finish(&mut self, mut on_event: impl FnMut(&[u8]) -> ControlFlow<()>) -> ControlFlow<()> {
        if !self.tail.is_empty() {
            let line = std::mem::take(&mut self.tail);
            self.owned_line(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event)
    }

    /// The position after the line end at `end` (a CR, LF, or CRLF).
    fn line_end(&mut self, chunk: &[u8], end: usize) -> usize {
        if chunk[end] == b'\r' {
            match chunk.get(end + 1) {
                Some(b'\n') => return end + 2,
                None => self.skip_lf = true,
                Some(_) => {}
            }
        }
        end + 1
    }

    /// Skips a UTF-8 BOM opening the stream (matched byte by byte, so it may span reads).
    fn skip_bom<'c>(&mut self, chunk: &'c [u8]) -> &'c [u8] {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let mut chunk = chunk;
        while self.seen < 3 {
            match chunk.split_first() {
                Some((&byte, rest)) if byte == BOM[self.seen] => {
                    self.seen += 1;
                    chunk = rest;
                }
                Some(_) => self.seen = 3,
                None => break,
            }
        }
        chunk
    }

    /// A line framed from the parser's own buffer (it spanned reads).
    fn owned_line(&mut self, line: &[u8], on_event: &mut impl FnMut(&[u8]) -> ControlFlow<()>) -> ControlFlow<()> {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if let Some(value) = data_value(line) {
            self.push_data(value);
        }
        ControlFlow::Continue(())
    }

    fn push_data(&mut self, value: &[u8]) {
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
    }

    /// Hands on the buffered event, if it had data, and starts the next.
    fn dispatch(&mut self, on_event: &mut impl FnMut(&[u8]) -> ControlFlow<()>) -> ControlFlow<()> {
        if !self.has_data {
            return ControlFlow::Continue(());
        }
        self.has_data = false;
        let flow = on_event(&self.data);
        self.data.clear();
        flow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event's data, the stream fed in the given reads.
    fn events(reads: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        let mut push = |data: &[u8]| {
            out.push(String::from_utf8(data.to_vec()).expect("UTF-8"));
            ControlFlow::Continue(())
        };
        for read in reads {
            let _ = parser.feed(read, &mut push);
        }
        let _ = parser.finish(&mut push);
        out
    }

    /// The same events whatever the reads: whole, split at every byte position (one and two
    /// cuts), and one byte at a time.
    fn assert_framing(stream: &[u8], expected: &[&str]) {
        assert_eq!(events(&[stream]), expected, "whole");
        for cut in 0..=stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(events(&[a, b]), expected, "cut at {cut}");
            for cut2 in cut..=stream.len() {
                let (b1, b2) = stream[cut..].split_at(cut2 - cut);
                assert_eq!(events(&[a, b1, b2]), expected, "cuts at {cut}, {cut2}");
            }
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytes), expected, "byte by byte");
    }

    #[test]
    fn lf_crlf_and_cr_line_ends() {
        let expected = ["{\"a\":1}", "[DONE]"];
        assert_framing(b"data: {\"a\":1}\n\ndata: [DONE]\n\n", &expected);
        assert_framing(b"data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n", &expected);
        assert_framing(b"data: {\"a\":1}\r\rdata: [DONE]\r\r", &expected);
        assert_framing(b"data: {\"a\":1}\r\n\ndata: [DONE]\n\r\n", &expected);
    }

    #[test]
    fn a_cr_then_lf_in_the_next_read_is_one_line_end() {
        // Split between CR and LF: still one line end, so no extra blank line (which would end
        // the event early and split its two data lines into two events).
        assert_eq!(events(&[b"data: a\r", b"\ndata: b\r\n\r\n"]), ["a\nb"]);
        assert_eq!(events(&[b"data: a\r", b"\n", b"\r", b"\n"]), ["a"]);
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        assert_framing(b"data: one\ndata: two\ndata:three\n\n", &["one\ntwo\nthree"]);
        assert_framing(b"data: one\r\ndata\r\ndata: three\r\n\r\n", &["one\n\nthree"]);
    }

    #[test]
    fn with_and_without_the_space() {
        assert_framing(b"data:x\n\ndata: y\n\ndata:  z\n\n", &["x", "y", " z"]);
    }

    #[test]
    fn comments_and_other_fields_are_ignored() {
        let stream = b": keep-alive\n\nevent: message\nid: 7\nretry: 100\ndata: a\n: mid-event\nfoo\n\n:x\n\n";
        assert_framing(stream, &["a"]);
        // A data-less event dispatches nothing; an empty `data:` dispatches an empty event.
        assert_framing(b"event: ping\n\ndata:\n\n", &[""]);
    }

    #[test]
    fn utf8_split_anywhere() {
        let stream = "data: {\"content\":\"h\u{e9}llo \u{4e16}\u{754c} \u{1f600}\"}\n\ndata: [DONE]\n\n";
        assert_framing(stream.as_bytes(), &["{\"content\":\"h\u{e9}llo \u{4e16}\u{754c} \u{1f600}\"}", "[DONE]"]);
    }

    #[test]
    fn an_event_open_at_the_end_is_dispatched() {
        assert_framing(b"data: a\n\ndata: b\n", &["a", "b"]);
        assert_framing(b"data: a\n\ndata: b", &["a", "b"]);
        assert_framing(b"data: a\r\ndata: b\r", &["a\nb"]);
    }

    #[test]
    fn a_leading_bom_is_skipped() {
        assert_framing(b"\xEF\xBB\xBFdata: a\n\n", &["a"]);
    }

    #[test]
    fn a_single_line_event_in_one_read_is_borrowed_from_it() {
        let read = b"data: {\"x\":1}\n\n".to_vec();
        let mut parser = SseParser::default();
        let mut borrowed = false;
        let _ = parser.feed(&read, |data| {
            borrowed = read.as_ptr_range().contains(&data.as_ptr());
            ControlFlow::Continue(())
        });
        assert!(borrowed, "the event's data should point into the read");
    }

    #[test]
    fn break_stops_the_stream() {
        let mut parser = SseParser::default();
        let mut seen = Vec::new();
        let flow = parser.feed(b"data: a\n\ndata: [DONE]\n\ndata: b\n\n", |data| {
            seen.push(data.to_vec());
            if data == b"[DONE]" { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert!(flow.is_break());
        assert_eq!(seen, [b"a".to_vec(), b"[DONE]".to_vec()]);
    }
}
