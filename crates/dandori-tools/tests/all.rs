//! Integration tests of dandori-tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
