mod errors;
mod fixture;
mod markdown;
