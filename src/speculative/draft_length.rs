//! How many tokens the draft proposes per round, fixed or adapting to how many the target accepts.

use crate::error::{Error, Result};

/// How many tokens the draft proposes per round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftLength {
    /// Draft tokens in the first round (at least 1).
    pub initial: u32,
    /// Adapt between `min` and `max`: one more after a round that accepted every draft, one fewer
    /// after a round that accepted none. `false` keeps `initial`.
    pub adaptive: bool,
    /// Fewest draft tokens when adaptive (at least 1).
    pub min: u32,
    /// Most draft tokens when adaptive (at most the target engine's `max_draft_len`).
    pub max: u32,
}

impl DraftLength {
    /// Always `k` draft tokens.
    pub fn fixed(k: u32) -> Self {
        DraftLength { initial: k, adaptive: false, min: k, max: k }
    }

    /// Starts at `initial`, adapting within `min..=max`.
    pub fn adaptive(initial: u32, min: u32, max: u32) -> Self {
        DraftLength { initial, adaptive: true, min, max }
    }

    pub(super) fn validate(&self) -> Result<()> {
        let ok = self.initial >= 1
            && (!self.adaptive || (self.min >= 1 && self.min <= self.initial && self.initial <= self.max));
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidConfig(format!(
                "draft length: initial {} must be >= 1 and, when adaptive, within min {} ..= max {} (min >= 1)",
                self.initial, self.min, self.max
            )))
        }
    }

    /// The next round's length after `accepted` of `drafted` were accepted.
    pub(super) fn next(&self, current: u32, accepted: u32, drafted: u32) -> u32 {
        if !self.adaptive {
            return current;
        }
        if drafted > 0 && accepted == drafted {
            (current + 1).min(self.max)
        } else if accepted == 0 {
            current.saturating_sub(1).max(self.min)
        } else {
            current
        }
    }
}
