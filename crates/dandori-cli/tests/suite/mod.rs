mod eval_localize;
