//! The one integration-test binary of dandori-plan.
// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
