mod errors;
mod fixture;
mod html;
mod markdown;
