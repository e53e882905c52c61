//! File-level localisation on SWE-bench-format instances.
