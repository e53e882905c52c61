mod load;
mod schema;
