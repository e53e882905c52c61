mod handoff;
mod inspect;
mod tools;
