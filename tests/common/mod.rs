//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod cli;
pub mod doc_figures;
pub mod gateway;
pub mod openai;
pub mod python;
pub mod server;
pub mod sim;
pub mod text;
