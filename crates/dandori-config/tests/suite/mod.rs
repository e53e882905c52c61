mod edit;
mod load;
mod schema;
mod trust;
