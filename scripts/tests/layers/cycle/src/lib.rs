//! Two files of one layer naming each other.
mod high;
mod low;
