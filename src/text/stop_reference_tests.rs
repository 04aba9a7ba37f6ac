//! The streaming stop matcher against a naive reference, over random stop sets, texts and chunkings.

use proptest::prelude::*;

use super::stop::{StopMatcher, StopStep};

/// The obvious matcher: rescans every stop string over all held text on every delta.
struct Reference {
    stops: Vec<String>,
    include: bool,
    held: String,
    stopped: bool,
}

impl Reference {
    fn push(&mut self, delta: &str) -> StopStep {
        if self.stopped {
            return StopStep::Continue(String::new());
        }
        self.held.push_str(delta);
        // The match that ends first; the longest (then the first listed) on a tie.
        let best = self
            .stops
            .iter()
            .enumerate()
            .filter_map(|(index, stop)| self.held.find(stop.as_str()).map(|start| (start + stop.len(), start, index)))
            .min_by_key(|&(end, start, index)| (end, start, index));
        if let Some((end, start, index)) = best {
            self.stopped = true;
            let mut text = std::mem::take(&mut self.held);
            text.truncate(if self.include { end } else { start });
            return StopStep::Stop { text, index, stop_string: self.stops[index].clone() };
        }
        let keep = (0..=self.held.len())
            .filter(|&i| self.held.is_char_boundary(i))
            .map(|i| &self.held[i..])
            .find(|tail| self.stops.iter().any(|s| s.len() > tail.len() && s.starts_with(tail)))
            .map_or(0, str::len);
        let held = self.held.split_off(self.held.len() - keep);
        StopStep::Continue(std::mem::replace(&mut self.held, held))
    }
}

/// Characters of one to four bytes, few enough that stop strings overlap and recur often.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(prop::sample::select(vec!['a', 'b', 'é', '€', '𝄞']), 0..max)
        .prop_map(|chars| chars.into_iter().collect())
}

/// Cuts `text` at `cuts` (fractions of its characters), on character boundaries.
fn chunks(text: &str, cuts: &[f64]) -> Vec<String> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let mut at: Vec<usize> = cuts.iter().map(|f| bounds[((bounds.len() - 1) as f64 * f) as usize]).collect();
    at.extend([0, text.len()]);
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| text[w[0]..w[1]].to_owned()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn streaming_matches_the_reference_on_every_chunking(
        stops in proptest::collection::vec(text(5).prop_filter("not empty", |s| !s.is_empty()), 1..6),
        text in text(40),
        cuts in proptest::collection::vec(0.0..1.0f64, 0..12),
        include in any::<bool>(),
    ) {
        let mut matcher = StopMatcher::builder().stop_strings(stops.clone()).include_stop_string(include).build()?;
        let mut reference = Reference { stops, include, held: String::new(), stopped: false };
        for chunk in chunks(&text, &cuts) {
            prop_assert_eq!(matcher.push(&chunk), reference.push(&chunk), "chunk {:?} of {:?}", chunk, text);
        }
        prop_assert_eq!(matcher.finish(), std::mem::take(&mut reference.held));
    }
}
