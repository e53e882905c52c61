//! The one integration-test binary of dandori-config.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
