//! Environment sub-phase (seed 002): EnvironmentAnalyzer, setup, verification.
