//! Two layers on one level, one naming the other: no cycle, but the level cannot tell which is lower.
mod left;
mod low;
mod right;
