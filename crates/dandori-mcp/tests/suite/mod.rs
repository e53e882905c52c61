mod inspect;
mod tools;
