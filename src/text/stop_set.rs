//! A compiled set of stop strings: one Aho-Corasick automaton that every matcher of a request shares.
//!
//! The matcher streams text through the automaton a byte at a time, so the work per delta is
//! proportional to the delta (plus, when a possible stop-string start is abandoned, a re-walk of
//! at most the held-back text), whatever the number of stop strings.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, Weak};

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

/// Stop lists at least this large (in bytes, all strings together) are shared between requests
/// that send the same list: one automaton of the documented maximum (1,024 strings of 4 KiB)
/// takes about 50 MB and most of a second to build, and a client typically sends the same list
/// with every request. Smaller lists build in microseconds and skip the shared table's lock.
const SHARE_FROM_BYTES: usize = 64 * 1024;

/// The large stop sets alive in this process, by a hash of their strings. Entries are weak: a set
/// lives as long as some matcher uses it, and dead entries are dropped at the next insert, so the
/// table holds no more entries than there are large sets in use.
fn shared_sets() -> &'static Mutex<HashMap<u64, Vec<Weak<StopSet>>>> {
    static SETS: OnceLock<Mutex<HashMap<u64, Vec<Weak<StopSet>>>>> = OnceLock::new();
    SETS.get_or_init(Default::default)
}

impl StopSet {
    /// The compiled set for `strings`: the one already in use by another request when the list is
    /// large and equal, otherwise a new one (see [`SHARE_FROM_BYTES`]).
    pub(crate) fn build(strings: Vec<String>) -> Result<Arc<Self>> {
        if strings.iter().map(String::len).sum::<usize>() < SHARE_FROM_BYTES {
            return Self::compile(strings);
        }
        let mut hasher = DefaultHasher::new();
        strings.hash(&mut hasher);
        let key = hasher.finish();
        let in_use = |sets: &HashMap<u64, Vec<Weak<StopSet>>>, strings: &[String]| {
            sets.get(&key)?.iter().filter_map(Weak::upgrade).find(|set| set.strings == strings)
        };
        if let Some(set) = in_use(&shared_sets().lock().unwrap_or_else(|e| e.into_inner()), &strings) {
            return Ok(set);
        }
        // Compiled outside the lock: other requests' lists are not held up by this one.
        let set = Self::compile(strings)?;
        let mut sets = shared_sets().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(raced) = in_use(&sets, &set.strings) {
            return Ok(raced);
        }
        sets.retain(|_, entries| {
            entries.retain(|entry| entry.strong_count() > 0);
            !entries.is_empty()
        });
        sets.entry(key).or_default().push(Arc::downgrade(&set));
        Ok(set)
    }

    /// Large stop sets currently shared (alive) in this process.
    #[cfg(test)]
    pub(crate) fn shared_in_use() -> usize {
        let sets = shared_sets().lock().unwrap_or_else(|e| e.into_inner());
        sets.values().flatten().filter(|entry| entry.strong_count() > 0).count()
    }

    /// Compiles `strings` (none empty: the builder checks) into one automaton.
    fn compile(strings: Vec<String>) -> Result<Arc<Self>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn large_list(seed: u8) -> Vec<String> {
        (0..20u8)
            .map(|i| format!("{}{}", char::from(b'a' + i), char::from(b'a' + seed).to_string().repeat(4096)))
            .collect()
    }

    #[test]
    fn requests_with_the_same_large_list_share_one_automaton_while_it_is_in_use() {
        let first = StopSet::build(large_list(1)).unwrap();
        let second = StopSet::build(large_list(1)).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        let other = StopSet::build(large_list(2)).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        // Small lists are never shared.
        let small = || StopSet::build(vec!["</s>".to_owned()]).unwrap();
        assert!(!Arc::ptr_eq(&small(), &small()));

        assert!(StopSet::shared_in_use() >= 2);
        let weak = Arc::downgrade(&first);
        drop((first, second));
        // The shared table does not keep the automaton alive: a later request compiles a new one.
        assert!(weak.upgrade().is_none());
        let again = StopSet::build(large_list(1)).unwrap();
        assert_eq!(again.strings(), large_list(1).as_slice());
        drop(other);
    }
}
