//! The one integration-test binary of dandori-plan.
mod suite;
