mod eval;
mod retrieval;
mod scan;
mod support;
mod tokenize;
