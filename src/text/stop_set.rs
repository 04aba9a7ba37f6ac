//! A compiled set of stop strings: one Aho-Corasick automaton that every matcher of a request shares.
//!
//! The matcher streams text through the automaton a byte at a time, so the work per delta is
//! proportional to the delta (plus, when a possible stop-string start is abandoned, a re-walk of
//! at most the held-back text), whatever the number of stop strings.

use std::sync::Arc;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind};

use super::error::{Result, TextError};

/// The stop strings of a matcher and their automaton.
#[derive(Debug)]
pub(crate) struct StopSet {
    strings: Vec<String>,
    /// `None` when there are no stop strings (nothing to build or match).
    automaton: Option<NFA>,
    /// Length of the longest stop string, in bytes.
    max_len: usize,
}

/// Where a stop string completed: the pattern and the byte span relative to the end of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    /// Position of the stop string in the list.
    pub index: usize,
    /// Its length in bytes (the match ends at the byte that completed it).
    pub len: usize,
}

impl StopSet {
    /// Compiles `strings` (none empty: the builder checks) into one automaton.
    pub(crate) fn build(strings: Vec<String>) -> Result<Arc<Self>> {
        let max_len = strings.iter().map(String::len).max().unwrap_or(0);
        let automaton = if strings.is_empty() {
            None
        } else {
            // Standard semantics keep every pattern reachable from every state, so each match
            // state lists all the stop strings that end at that byte; prefilters only help
            // whole-haystack searches, which this never runs.
            let nfa = NFA::builder()
                .match_kind(MatchKind::Standard)
                .prefilter(false)
                .build(&strings)
                .map_err(|e| TextError::StopStrings(e.to_string()))?;
            Some(nfa)
        };
        Ok(Arc::new(StopSet { strings, automaton, max_len }))
    }

    /// The stop strings, in the order their indices refer to.
    pub(crate) fn strings(&self) -> &[String] {
        &self.strings
    }

    /// Heap bytes the automaton uses (0 without stop strings).
    pub(crate) fn automaton_bytes(&self) -> usize {
        self.automaton.as_ref().map_or(0, Automaton::memory_usage)
    }

    /// Length of the longest stop string in bytes.
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    /// The state before any text, for the unanchored scan (`Anchored::No`) or a walk that must
    /// stay on one stop string's prefix from its first byte (`Anchored::Yes`).
    pub(crate) fn start(&self, anchored: Anchored) -> StateID {
        match &self.automaton {
            // A contiguous NFA supports both kinds of start; the fallback is never used.
            Some(nfa) => nfa.start_state(anchored).unwrap_or(StateID::ZERO),
            None => StateID::ZERO,
        }
    }

    /// Steps the unanchored scan over `bytes`; stops at the first byte that completes a stop
    /// string and returns its offset in `bytes` with the match (the longest of those ending
    /// there, the first listed on a tie).
    pub(crate) fn scan(&self, state: &mut StateID, bytes: &[u8]) -> Option<(usize, Found)> {
        let nfa = self.automaton.as_ref()?;
        for (offset, &byte) in bytes.iter().enumerate() {
            *state = nfa.next_state(Anchored::No, *state, byte);
            if nfa.is_match(*state) {
                let found = (0..nfa.match_len(*state))
                    .map(|i| nfa.match_pattern(*state, i).as_usize())
                    .map(|index| Found { index, len: self.strings[index].len() })
                    .min_by_key(|found| (std::cmp::Reverse(found.len), found.index));
                if let Some(found) = found {
                    return Some((offset, found));
                }
            }
        }
        None
    }

    /// Steps an anchored walk over `bytes`: the state if `bytes` continue a prefix of some stop
    /// string, `None` as soon as they leave every one.
    pub(crate) fn walk(&self, mut state: StateID, bytes: &[u8]) -> Option<StateID> {
        let nfa = self.automaton.as_ref()?;
        for &byte in bytes {
            state = nfa.next_state(Anchored::Yes, state, byte);
            if nfa.is_dead(state) {
                return None;
            }
        }
        Some(state)
    }
}
