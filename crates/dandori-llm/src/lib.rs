//! Model providers: OpenAI-compatible Chat Completions and Anthropic Messages. Knows nothing of planning.
