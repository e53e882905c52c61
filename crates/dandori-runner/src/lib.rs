//! Runner: the execution coordinator (stage machine, executors, reflection, guardrails).
