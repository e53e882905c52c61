mod load;
mod schema;
mod trust;
