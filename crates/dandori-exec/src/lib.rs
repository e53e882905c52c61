//! Command execution: command policy (seed 002 §11), hardened child processes, sandbox.
