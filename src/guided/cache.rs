//! A bounded, least-recently-used cache of compiled grammars, by guide, so that a repeated guide
//! (the same response format or tool list on every request, the usual case behind a gateway) skips
//! compilation and starts with the lexer states earlier requests already built.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use llguidance::TokenParser;

use crate::types::guided::GuideType;

/// What identifies a compiled grammar: the guide type and the guide text.
type GuideKey = (GuideType, Option<String>);

/// Compiled parsers in their initial state, each with the tick of its last use.
#[derive(Default)]
struct Entries {
    parsers: HashMap<GuideKey, (TokenParser, u64)>,
    tick: u64,
}

/// At most `capacity` compiled grammars; the least recently used goes first. Eviction scans the
/// entries, which costs nothing next to compiling a grammar at the capacities used (tens).
pub(super) struct GrammarCache {
    capacity: usize,
    entries: Mutex<Entries>,
}

impl GrammarCache {
    /// A cache of at most `capacity` grammars (0 turns caching off).
    pub(super) fn new(capacity: usize) -> Self {
        Self { capacity, entries: Mutex::default() }
    }

    /// A fresh parser for the guide: a copy of the cached one (sharing its lexer states, which only
    /// ever grow and serve every sequence of this grammar alike), or `compile`'s, which is then kept.
    pub(super) fn parser<E>(
        &self,
        guide_type: GuideType,
        guide: Option<&str>,
        compile: impl FnOnce() -> Result<TokenParser, E>,
    ) -> Result<TokenParser, E> {
        if self.capacity == 0 {
            return compile();
        }
        let key = (guide_type, guide.map(str::to_owned));
        {
            let mut entries = self.lock();
            entries.tick += 1;
            let tick = entries.tick;
            if let Some((parser, used)) = entries.parsers.get_mut(&key) {
                *used = tick;
                return Ok(parser.clone());
            }
        }
        // Compiled outside the lock: a slow grammar does not hold up requests with other guides.
        let parser = compile()?;
        let mut entries = self.lock();
        if entries.parsers.len() >= self.capacity && !entries.parsers.contains_key(&key) {
            let oldest = entries.parsers.iter().min_by_key(|(_, (_, used))| *used).map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                entries.parsers.remove(&oldest);
            }
        }
        let tick = entries.tick;
        entries.parsers.insert(key, (parser.clone(), tick));
        Ok(parser)
    }

    /// Grammars held now.
    pub(super) fn len(&self) -> usize {
        self.lock().parsers.len()
    }

    /// The map, even after a panic elsewhere while it was held: entries are whole parsers, never
    /// half updated.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
