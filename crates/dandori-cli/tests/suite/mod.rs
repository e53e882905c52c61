mod env;
