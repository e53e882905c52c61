mod eval;
mod evidence;
mod retrieval;
mod scan;
mod support;
mod tokenize;
