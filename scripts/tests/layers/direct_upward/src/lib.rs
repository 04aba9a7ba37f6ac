//! An upward path in an expression.
mod high;
mod low;
