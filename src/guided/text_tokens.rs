//! The allowed tokens of one step other than the stop ids, counted per 32-id word of the mask so
//! that the seeded choice finds the n-th one without listing them (inside a JSON string nearly the
//! whole vocabulary is allowed, and listing it every step cost more than the mask itself).

/// A step's allowed text tokens, in id order: the mask's words with the stop ids cleared and the
/// running count of set bits before each word. The buffers are reused from step to step.
#[derive(Debug, Default)]
pub(super) struct TextTokens {
    words: Vec<u32>,
    /// `prefix[i]`: text tokens in `words[..i]`; one entry more than `words`.
    prefix: Vec<u32>,
}

impl TextTokens {
    /// Refills from a mask (bit `i % 32` of word `i / 32` is token `i`) without `stop_ids`.
    pub(super) fn fill(&mut self, mask: &[u32], stop_ids: &[u32]) {
        self.words.clear();
        self.words.extend_from_slice(mask);
        for &stop in stop_ids {
            if let Some(word) = self.words.get_mut(stop as usize / 32) {
                *word &= !(1u32 << (stop % 32));
            }
        }
        self.prefix.clear();
        self.prefix.push(0);
        let mut total = 0u32;
        for word in &self.words {
            total += word.count_ones();
            self.prefix.push(total);
        }
    }

    /// How many text tokens are allowed.
    pub(super) fn len(&self) -> usize {
        self.prefix.last().copied().unwrap_or(0) as usize
    }

    /// Whether no text token is allowed.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `n`-th allowed text token in id order (`n < self.len()`).
    pub(super) fn nth(&self, n: usize) -> u32 {
        let n = n as u32;
        // The word holding it: the last one whose running count before it is at most `n`.
        let word = self.prefix.partition_point(|&before| before <= n) - 1;
        let mut bits = self.words[word];
        for _ in 0..n - self.prefix[word] {
            bits &= bits - 1;
        }
        word as u32 * 32 + bits.trailing_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::TextTokens;

    /// The n-th entry is the n-th id of the listed, stop-free allowed set, for sparse and dense masks.
    #[test]
    fn nth_matches_the_listed_allowed_tokens() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for density in [1u32, 8, 31, 32] {
            let mask: Vec<u32> = (0..40)
                .map(|_| {
                    (0..32).fold(0u32, |word, bit| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        if (state % 32) < u64::from(density) { word | (1 << bit) } else { word }
                    })
                })
                .collect();
            let stops = [0u32, 77, 1279];
            let listed: Vec<u32> = (0..40 * 32u32)
                .filter(|&t| mask[t as usize / 32] & (1 << (t % 32)) != 0 && !stops.contains(&t))
                .collect();
            let mut tokens = TextTokens::default();
            tokens.fill(&mask, &stops);
            assert_eq!(tokens.len(), listed.len(), "density {density}");
            for (n, &token) in listed.iter().enumerate() {
                assert_eq!(tokens.nth(n), token, "density {density}, n {n}");
            }
        }
    }

    #[test]
    fn an_empty_or_stop_only_mask_has_no_text_tokens() {
        let mut tokens = TextTokens::default();
        tokens.fill(&[], &[0]);
        assert!(tokens.is_empty());
        tokens.fill(&[0b1, 0], &[0]);
        assert!(tokens.is_empty());
        tokens.fill(&[0b11, 0], &[0]);
        assert_eq!((tokens.len(), tokens.nth(0)), (1, 1));
    }
}
