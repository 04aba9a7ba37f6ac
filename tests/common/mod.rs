//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod python;
pub mod sim;
pub mod text;
