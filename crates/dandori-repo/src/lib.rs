//! Repository scan (tree, environment files, README, test layout) and retrieval.
