mod eval;
mod evidence;
mod history;
mod retrieval;
mod scan;
mod support;
mod tokenize;
