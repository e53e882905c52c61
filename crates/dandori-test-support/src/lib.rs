//! Test support: a scripted fake LLM server over real HTTP and temporary git repositories.
