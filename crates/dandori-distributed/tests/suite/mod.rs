mod protocol;
// --
